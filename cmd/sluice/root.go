package main

import (
	"github.com/spf13/cobra"
)

// Command groups, so `sluice --help` reads as servers / client / tools.
const (
	groupServers = "servers"
	groupClient  = "client"
	groupTools   = "tools"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Sluice: a distributed near-real-time full-text search cluster",
		Long: `Sluice is a distributed near-real-time full-text search cluster.

Data nodes host Lucene-style shard engines; coordinators serve the public gRPC
API and place shards through etcd, so a reindex can copy each shard on the node
where it already lives; an operator manages Index and Reindex resources on
Kubernetes. This one binary runs every part of it, and is also its client.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newBenchCmd(),
		newNodeCmd(),
		newCoordinatorCmd(),
		newDevCmd(),
		newOperatorCmd(),
		newIndexCmd(),
		newHealthCmd(),
		newStateCmd(),
		newClusterCmd(),
		newReindexCmd(),
		newTasksCmd(),
		newBulkCmd(),
		newGetCmd(),
		newUpdateCmd(),
		newSearchCmd(),
		newScrollCmd(),
		newRefreshCmd(),
		newSampleCmd(),
		newShardCmd(),
		newAuthCmd(),
		newTLSCmd(),
	)
	addGroups(root)
	return root
}

// addGroups registers the help groups that have commands, so --help shows
// no empty headings.
func addGroups(root *cobra.Command) {
	used := map[string]bool{groupTools: true} // help and completion live there
	for _, c := range root.Commands() {
		used[c.GroupID] = true
	}
	for _, g := range []cobra.Group{
		{ID: groupServers, Title: "Servers:"},
		{ID: groupClient, Title: "Client commands:"},
		{ID: groupTools, Title: "Tools:"},
	} {
		if used[g.ID] {
			root.AddGroup(&g)
		}
	}
	root.SetHelpCommandGroupID(groupTools)
	root.SetCompletionCommandGroupID(groupTools)
}
