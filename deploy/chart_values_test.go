package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// documentedValues walks values.yaml and returns the dotted paths of the
// keys documented with a "# --" comment (helm-docs style). A documented key
// is one value, even when it holds a map (such as resources); an
// undocumented key must be a group of documented keys.
func documentedValues(t *testing.T, node *yaml.Node, prefix string) []string {
	t.Helper()
	var paths []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, val := node.Content[i], node.Content[i+1]
		path := prefix + key.Value
		switch {
		case strings.Contains(key.HeadComment, "# --"):
			paths = append(paths, path)
		case val.Kind == yaml.MappingNode:
			paths = append(paths, documentedValues(t, val, path+".")...)
		default:
			t.Errorf("values.yaml: %s has no '# --' comment", path)
		}
	}
	return paths
}

// schemaNode is the part of a JSON schema the test walks.
type schemaNode struct {
	Properties map[string]*schemaNode `json:"properties"`
}

// TestChartValuesDocumented keeps values.yaml, the README's values table and
// values.schema.json in step: every value has a comment, a row and a schema
// property; every row is a value.
func TestChartValuesDocumented(t *testing.T) {
	data, err := os.ReadFile("../charts/sluice/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	values := documentedValues(t, doc.Content[0], "")

	readme, err := os.ReadFile("../charts/sluice/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(readme, -1) {
		rows = append(rows, string(m[1]))
	}

	for _, v := range values {
		if !slices.Contains(rows, v) {
			t.Errorf("README.md has no row for value %s", v)
		}
	}
	for _, r := range rows {
		if !slices.Contains(values, r) {
			t.Errorf("README.md documents %s, which values.yaml does not have", r)
		}
	}
	// values.schema.json rejects unknown keys, so it must know every value.
	data, err = os.ReadFile("../charts/sluice/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema schemaNode
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		node := &schema
		for _, k := range strings.Split(v, ".") {
			if node = node.Properties[k]; node == nil {
				t.Errorf("values.schema.json has no property for value %s", v)
				break
			}
		}
	}

	if len(values) < 50 {
		t.Errorf("found only %d values; is the walk broken?", len(values))
	}
}
