package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/esjson"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// queryFlags are the JSON query flags of search, scroll and reindex: the
// Elasticsearch query DSL, which users know and Index and Reindex
// resources take, or the protobuf JSON of sluice.v1.Query, which gRPC
// clients send.
type queryFlags struct{ dsl, protoJSON string }

func (f *queryFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&f.dsl, "query", "", what+" matching this query: Elasticsearch query DSL JSON, or @file")
	cmd.Flags().StringVar(&f.protoJSON, "proto-json", "", what+" matching this sluice.v1.Query in protobuf JSON (as gRPC clients send it), or @file")
	cmd.MarkFlagsMutuallyExclusive("query", "proto-json")
}

// set reports whether either flag gives a query.
func (f *queryFlags) set() bool { return f.dsl != "" || f.protoJSON != "" }

// parse returns the query the flags give; nil (match all) when neither
// does.
func (f *queryFlags) parse() (*sluicev1.Query, error) {
	switch {
	case f.dsl != "":
		data, err := inlineOrFile("query", f.dsl)
		if err != nil {
			return nil, err
		}
		q, err := esjson.ParseQuery(data)
		if err != nil {
			return nil, fmt.Errorf("--query: %w", err)
		}
		return q, nil
	case f.protoJSON != "":
		data, err := inlineOrFile("proto-json", f.protoJSON)
		if err != nil {
			return nil, err
		}
		q := &sluicev1.Query{}
		if err := protojson.Unmarshal(data, q); err != nil {
			return nil, fmt.Errorf("--proto-json: %w", err)
		}
		return q, nil
	}
	return nil, nil
}

// printQuery writes q as indented Elasticsearch query DSL.
func printQuery(w io.Writer, q *sluicev1.Query) error {
	b, err := esjson.MarshalQuery(q)
	if err != nil {
		return err
	}
	return printIndented(w, b)
}

// printIndented writes compact JSON indented by two spaces.
func printIndented(w io.Writer, b []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, out.String())
	return err
}

func matchQuery(field, text string) *sluicev1.Query {
	return &sluicev1.Query{Kind: &sluicev1.Query_Match{Match: &sluicev1.MatchQuery{Field: field, Query: text}}}
}

// fieldQuery turns a query string that names its field ("field:value"),
// or any text when field is given, into a match query; false for free
// text without a field.
func fieldQuery(q, field string) (*sluicev1.Query, bool) {
	if i := strings.IndexByte(q, ':'); i > 0 && !strings.ContainsAny(q[:i], " \t") {
		return matchQuery(q[:i], q[i+1:]), true
	}
	if field != "" {
		return matchQuery(field, q), true
	}
	return nil, false
}

// freeTextQuery matches text on every text field of the indices.
func freeTextQuery(ctx context.Context, c *client.Client, indices []string, text string) (*sluicev1.Query, error) {
	fields := map[string]bool{}
	for _, name := range indices {
		resp, err := c.GetIndex(ctx, &sluicev1.GetIndexRequest{Name: name})
		if err != nil {
			return nil, rpcError(err)
		}
		for f, m := range resp.Index.GetMapping().GetProperties() {
			if m.GetType() == sluicev1.FieldType_FIELD_TYPE_TEXT {
				fields[f] = true
			}
		}
	}
	if len(fields) == 0 {
		return nil, errors.New("the indices have no text field: give a field (field:value or --field)")
	}
	b := &sluicev1.BoolQuery{}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		b.Should = append(b.Should, matchQuery(f, text))
	}
	return &sluicev1.Query{Kind: &sluicev1.Query_Bool{Bool: b}}, nil
}
