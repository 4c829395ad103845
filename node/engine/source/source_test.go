package source

import (
	"errors"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name, src, patch, want string
		changed                bool
	}{
		{"replace", `{"a":1,"b":2}`, `{"b":3}`, `{"a":1,"b":3}`, true},
		{"add last", `{"b":1,"a":2}`, `{"c":3}`, `{"b":1,"a":2,"c":3}`, true},
		{"deep", `{"o":{"x":1,"y":{"z":2}},"k":0}`, `{"o":{"y":{"w":3}}}`, `{"o":{"x":1,"y":{"z":2,"w":3}},"k":0}`, true},
		{"object replaces scalar", `{"o":1}`, `{"o":{"x":1}}`, `{"o":{"x":1}}`, true},
		{"scalar replaces object", `{"o":{"x":1}}`, `{"o":2}`, `{"o":2}`, true},
		{"array replaced whole", `{"t":[1,2,3]}`, `{"t":[4]}`, `{"t":[4]}`, true},
		{"null is a value", `{"a":1}`, `{"a":null}`, `{"a":null}`, true},
		{"noop", `{"a": 1, "o": {"x": "s"}}`, `{"a":1,"o":{"x":"s"}}`, `{"a": 1, "o": {"x": "s"}}`, false},
		{"untouched bytes kept", `{"a": [1, 2], "b": 1}`, `{"b":2}`, `{"a":[1, 2],"b":2}`, true},
		{"no html escaping", `{"a<b":"&"}`, `{"c":"<>"}`, `{"a<b":"&","c":"<>"}`, true},
		{"empty patch", `{"a":1}`, `{}`, `{"a":1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed, err := Merge([]byte(tt.src), []byte(tt.patch))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want || changed != tt.changed {
				t.Errorf("Merge(%s, %s) = %s, %v; want %s, %v", tt.src, tt.patch, got, changed, tt.want, tt.changed)
			}
		})
	}
}

func TestMergeRejects(t *testing.T) {
	for _, tt := range []struct{ src, patch string }{
		{`[1]`, `{}`}, {`{}`, `"x"`}, {`{"a":1} {}`, `{}`}, {`{"a":`, `{}`}, {`{}`, `{"a":1}x`},
	} {
		if _, _, err := Merge([]byte(tt.src), []byte(tt.patch)); !errors.Is(err, ErrNotObject) {
			t.Errorf("Merge(%s, %s): %v, want ErrNotObject", tt.src, tt.patch, err)
		}
	}
}

func TestSet(t *testing.T) {
	tests := []struct{ name, src, field, val, want string }{
		{"top", `{"p":1,"q":2}`, "p", `5`, `{"p":5,"q":2}`},
		{"nested", `{"s":{"p":1,"n":"x"}}`, "s.p", `5`, `{"s":{"p":5,"n":"x"}}`},
		{"dotted key", `{"s.p":1}`, "s.p", `5`, `{"s.p":5}`},
		{"mixed", `{"a":{"b.c":1}}`, "a.b.c", `5`, `{"a":{"b.c":5}}`},
		{"missing, object exists", `{"s":{"n":1}}`, "s.p", `5`, `{"s":{"n":1,"p":5}}`},
		{"missing", `{"x":1}`, "s.p", `5`, `{"x":1,"s.p":5}`},
		{"array replaced", `{"p":[1,2]}`, "p", `5`, `{"p":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Set([]byte(tt.src), tt.field, []byte(tt.val))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Set(%s, %s, %s) = %s, want %s", tt.src, tt.field, tt.val, got, tt.want)
			}
		})
	}
}
