package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/auth"
)

func newAuthCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:     "auth",
		Short:   "Manage API keys and roles of a secure cluster",
		GroupID: groupClient,
		Long: `Manage the API keys and roles of a secure cluster (docs/security.md). Every
command but whoami needs the admin role: an admin API key (sluice dev --secure
prints one), or a client certificate of the cluster CA with organization "admin".

A role grants read, write, manage or monitor on index name patterns ("logs-*",
"*"), or admin. Built-in roles: admin, read_all, write_all, monitor.`,
		Example: `  sluice auth put-role logs-reader --index 'logs-*:read,monitor'
  sluice auth create-key --name dashboards --role logs-reader --expiration 720h
  export SLUICE_API_KEY=<encoded key printed above>
  sluice auth whoami
  sluice auth revoke-key <id>`,
	}
	f.register(cmd, timeoutWhole)
	authCall := func(cmd *cobra.Command, fn func(ctx context.Context, a sluicev1.AuthClient) error) error {
		return f.call(cmd, func(ctx context.Context, c *client.Client) error {
			if err := fn(ctx, sluicev1.NewAuthClient(c.Conn())); err != nil {
				return rpcError(err)
			}
			return nil
		})
	}
	var asJSON bool
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print as JSON")

	whoami := &cobra.Command{Use: "whoami", Short: "Show who the credentials authenticate as", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				r, err := a.Authenticate(ctx, &sluicev1.AuthenticateRequest{})
				if err != nil || asJSON {
					return orJSON(cmd, r, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\troles: %s\n", r.Principal, strings.Join(r.Roles, ","))
				return nil
			})
		}}

	var name string
	var roles []string
	var expiration time.Duration
	createKey := &cobra.Command{Use: "create-key", Short: "Create an API key; its secret is printed once", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &sluicev1.CreateApiKeyRequest{Name: name, Roles: roles}
			if expiration > 0 {
				req.Expiration = durationpb.New(expiration)
			}
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				r, err := a.CreateApiKey(ctx, req)
				if err != nil || asJSON {
					return orJSON(cmd, r, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "id:      %s\nencoded: %s\n\nUse it with --api-key %s or SLUICE_API_KEY; it is not shown again.\n",
					r.Key.Id, r.Encoded, r.Encoded)
				return nil
			})
		}}
	createKey.Flags().StringVar(&name, "name", "", "a name for people (required)")
	createKey.Flags().StringSliceVar(&roles, "role", nil, "role the key holds (repeat or comma-separate)")
	createKey.Flags().DurationVar(&expiration, "expiration", 0, "how long the key works (default: until revoked)")

	listKeys := &cobra.Command{Use: "list-keys", Short: "List API keys (never their secrets)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				r, err := a.ListApiKeys(ctx, &sluicev1.ListApiKeysRequest{})
				if err != nil || asJSON {
					return orJSON(cmd, r, err)
				}
				w := table(cmd.OutOrStdout())
				fmt.Fprintln(w, "ID\tNAME\tROLES\tCREATOR\tEXPIRES")
				for _, k := range r.Keys {
					exp := "never"
					if k.Expiration != nil {
						exp = k.Expiration.AsTime().Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", k.Id, k.Name, strings.Join(k.Roles, ","), k.Creator, exp)
				}
				return w.Flush()
			})
		}}

	revokeKey := &cobra.Command{Use: "revoke-key ID", Short: "Revoke an API key (refused everywhere within seconds)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				_, err := a.RevokeApiKey(ctx, &sluicev1.RevokeApiKeyRequest{Id: args[0]})
				return err
			})
		}}

	var admin bool
	var indexSpecs []string
	putRole := &cobra.Command{Use: "put-role NAME", Short: "Create or replace a role", Args: cobra.ExactArgs(1),
		Example: `  sluice auth put-role ingest --index 'logs-*:write' --index 'logs-*:monitor'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			role := &sluicev1.Role{Name: args[0], Admin: admin}
			for _, spec := range indexSpecs {
				ip, err := parseIndexPrivileges(spec)
				if err != nil {
					return err
				}
				role.Indices = append(role.Indices, ip)
			}
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				_, err := a.PutRole(ctx, &sluicev1.PutRoleRequest{Role: role})
				return err
			})
		}}
	putRole.Flags().BoolVar(&admin, "admin", false, "grant every privilege and the Auth service")
	putRole.Flags().StringArrayVar(&indexSpecs, "index", nil, "PATTERNS:PRIVILEGES, e.g. 'logs-*,metrics-*:read,monitor' (repeatable)")

	deleteRole := &cobra.Command{Use: "delete-role NAME", Short: "Delete a role", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				_, err := a.DeleteRole(ctx, &sluicev1.DeleteRoleRequest{Name: args[0]})
				return err
			})
		}}

	listRoles := &cobra.Command{Use: "list-roles", Short: "List roles, the built-in ones included", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return authCall(cmd, func(ctx context.Context, a sluicev1.AuthClient) error {
				r, err := a.ListRoles(ctx, &sluicev1.ListRolesRequest{})
				if err != nil || asJSON {
					return orJSON(cmd, r, err)
				}
				w := table(cmd.OutOrStdout())
				fmt.Fprintln(w, "ROLE\tGRANTS")
				for _, role := range r.Roles {
					var grants []string
					if role.Admin {
						grants = append(grants, "admin")
					}
					for _, ip := range role.Indices {
						grants = append(grants, formatIndexPrivileges(ip))
					}
					fmt.Fprintf(w, "%s\t%s\n", role.Name, strings.Join(grants, " "))
				}
				return w.Flush()
			})
		}}
	cmd.AddCommand(whoami, createKey, listKeys, revokeKey, putRole, deleteRole, listRoles)
	return cmd
}

// orJSON prints m as JSON unless the call failed.
func orJSON(cmd *cobra.Command, m proto.Message, err error) error {
	if err != nil {
		return err
	}
	return printJSON(cmd.OutOrStdout(), m)
}

// parseIndexPrivileges reads --index "pattern[,pattern]:privilege[,privilege]".
func parseIndexPrivileges(spec string) (*sluicev1.IndexPrivileges, error) {
	ip, err := auth.ParseIndexPrivileges(spec)
	if err != nil {
		return nil, fmt.Errorf("--index %w", err)
	}
	return ip, nil
}

func formatIndexPrivileges(ip *sluicev1.IndexPrivileges) string {
	ps := make([]string, len(ip.Privileges))
	for i, p := range ip.Privileges {
		ps[i] = client.EnumName(p)
	}
	return strings.Join(ip.Names, ",") + ":" + strings.Join(ps, ",")
}
