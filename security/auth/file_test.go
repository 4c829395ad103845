package auth

import (
	"strings"
	"testing"
)

func TestParseKeysFile(t *testing.T) {
	const hash = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
	for _, tt := range []struct {
		name, file, err string
	}{
		{"good", `{"roles": [{"name": "ops", "indices": ["a-*,b:manage,read"]}], "keys": [{"id": "k1", "name": "n", "roles": ["ops"], "secretSha256": "` + hash + `"}]}`, ""},
		{"unknown field", `{"users": []}`, "unknown field"},
		{"built-in role", `{"roles": [{"name": "admin", "admin": true}]}`, "built in"},
		{"bad privilege", `{"roles": [{"name": "r", "indices": ["a:fly"]}]}`, "roles[0].indices"},
		{"role twice", `{"roles": [{"name": "r"}, {"name": "r"}]}`, "given twice"},
		{"key without roles", `{"keys": [{"id": "k1", "name": "n", "secretSha256": "` + hash + `"}]}`, "keys[0].roles"},
		{"key twice", `{"keys": [{"id": "k1", "name": "n", "roles": ["admin"], "secretSha256": "` + hash + `"}, {"id": "k1", "name": "m", "roles": ["admin"], "secretSha256": "` + hash + `"}]}`, "given twice"},
		{"bad id", `{"keys": [{"id": "k:1", "name": "n", "roles": ["admin"], "secretSha256": "` + hash + `"}]}`, "keys[0].id"},
		{"short hash", `{"keys": [{"id": "k1", "name": "n", "roles": ["admin"], "secretSha256": "abcd"}]}`, "keys[0].secretSha256"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keys, roles, err := parseKeysFile([]byte(tt.file))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				k := keys["k1"]
				if k == nil || !secretMatches("password", k.hash) || roles["ops"] == nil {
					t.Fatalf("keys %v roles %v", keys, roles)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			}
		})
	}
}
