package datapath

import "context"

// HoldBudget takes a node's whole in-flight budget, as concurrent bulks
// would, until release is called.
func HoldBudget(d *DataPath, nodeID string) (release func(), ok bool) {
	r, err := d.budget(nodeID).Reserve(context.Background(), d.opts.MaxInFlightBytesPerNode, 0)
	if err != nil {
		return nil, false
	}
	return r.Release, true
}

// PITNodes are the nodes whose readers a point-in-time id pins, one per
// shard.
func PITNodes(id string) ([]string, error) {
	ss, err := decodePIT(id)
	if err != nil {
		return nil, err
	}
	nodes := make([]string, len(ss))
	for i, s := range ss {
		nodes[i] = s.node
	}
	return nodes, nil
}
