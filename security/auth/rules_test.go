package auth

import (
	"testing"

	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// TestEveryPublicMethodHasARule walks the services of sluice.v1, health
// and reflection and fails for any method the rule table misses (which
// the guard would refuse, but a new RPC must be given its privilege on
// purpose), and for any rule naming no method.
func TestEveryPublicMethodHasARule(t *testing.T) {
	_ = sluicev1.File_sluice_v1_auth_proto
	_ = grpc_health_v1.File_grpc_health_v1_health_proto
	seen := map[string]bool{}
	for _, pkg := range []protoreflect.FullName{"sluice.v1", "grpc.health.v1"} {
		protoregistry.GlobalFiles.RangeFilesByPackage(pkg, func(fd protoreflect.FileDescriptor) bool {
			for i := range fd.Services().Len() {
				sd := fd.Services().Get(i)
				for j := range sd.Methods().Len() {
					name := "/" + string(sd.FullName()) + "/" + string(sd.Methods().Get(j).Name())
					seen[name] = true
					if _, ok := rules[name]; !ok {
						t.Errorf("%s has no access rule", name)
					}
				}
			}
			return true
		})
	}
	seen[reflectionV1], seen[reflectionV1Alpha] = true, true
	if len(seen) < 30 {
		t.Fatalf("walked only %d methods: are the descriptors registered?", len(seen))
	}
	for name := range rules {
		if !seen[name] {
			t.Errorf("rule for %s, which no service has", name)
		}
	}
}

func TestAllowed(t *testing.T) {
	role := func(names []string, ps ...sluicev1.Privilege) *sluicev1.Role {
		return &sluicev1.Role{Indices: []*sluicev1.IndexPrivileges{{Names: names, Privileges: ps}}}
	}
	logsRead := role([]string{"logs-*"}, read)
	for _, tt := range []struct {
		roles []*sluicev1.Role
		p     sluicev1.Privilege
		name  string
		want  bool
	}{
		{[]*sluicev1.Role{logsRead}, read, "logs-2024", true},
		{[]*sluicev1.Role{logsRead}, read, "logs", false},
		{[]*sluicev1.Role{logsRead}, write, "logs-2024", false},
		{[]*sluicev1.Role{logsRead}, read, "*", false},
		{[]*sluicev1.Role{role([]string{"*"}, monitor)}, monitor, "*", true},
		{[]*sluicev1.Role{role([]string{"books"}, manage)}, monitor, "books", true},
		{[]*sluicev1.Role{role([]string{"books"}, monitor)}, manage, "books", false},
		{[]*sluicev1.Role{{Admin: true}}, manage, "*", true},
		{nil, read, "books", false},
	} {
		if got := allowed(tt.roles, tt.p, tt.name); got != tt.want {
			t.Errorf("allowed(%v, %v, %q) = %v", tt.roles, tt.p, tt.name, got)
		}
	}
}
