package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluice-search/sluice/sample"
)

func newSampleCmd() *cobra.Command {
	var docs int
	var seed uint64
	var out string
	var mapping bool
	var kinds []string
	for _, k := range sample.Kinds {
		kinds = append(kinds, fmt.Sprintf("  %-9s %s", k.Name, k.Doc))
	}
	cmd := &cobra.Command{
		Use:     "sample [KIND]",
		Short:   "Write realistic sample documents as JSON lines, for a first session",
		GroupID: groupTools,
		Args:    cobra.MaximumNArgs(1),
		Long: `Write generated documents, one JSON object a line, to standard output or
--output: what "sluice bulk" loads. The same kind, --docs and --seed give
the same documents, byte for byte; nothing is downloaded. --mapping prints
the kind's Elasticsearch mapping instead, as "sluice index create --mapping"
takes it.

Kinds (default products):
` + strings.Join(kinds, "\n") + `

For benchmarks use a real corpus: see bench/corpus and "sluice bench".`,
		Example: `  sluice sample --docs 3
  sluice sample products --docs 20000 -o products.jsonl
  sluice index create products --mapping "$(sluice sample --mapping)" && sluice sample | sluice bulk - --index products
  sluice sample logs --docs 100000 --seed 7 | sluice bulk - --index logs`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name := sample.Kinds[0].Name
			if len(args) == 1 {
				name = args[0]
			}
			k, err := sample.KindNamed(name)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if mapping {
				return printIndented(w, []byte(k.Mapping))
			}
			if docs < 0 {
				return fmt.Errorf("--docs must be >= 0, got %d", docs)
			}
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				if err := sample.Write(f, k, docs, seed); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}
			return sample.Write(w, k, docs, seed)
		},
	}
	cmd.Flags().IntVar(&docs, "docs", 20_000, "number of documents")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed: another seed, other documents")
	cmd.Flags().StringVarP(&out, "output", "o", "-", "output file (- for stdout)")
	cmd.Flags().BoolVar(&mapping, "mapping", false, "print the kind's mapping instead of documents")
	return cmd
}
