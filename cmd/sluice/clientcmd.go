package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/client"
)

// clientFlags are the connection flags of every client command.
type clientFlags struct {
	addr    string
	timeout time.Duration
}

func (f *clientFlags) register(cmd *cobra.Command) {
	def := os.Getenv("SLUICE_ADDR")
	if def == "" {
		def = client.DefaultAddr
	}
	cmd.PersistentFlags().StringVar(&f.addr, "addr", def, "coordinator address (default from $SLUICE_ADDR)")
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", 30*time.Second, "time limit for the command")
}

// call dials the coordinator and runs fn with the connection and a context
// bounded by --timeout, closing both after.
func (f *clientFlags) call(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	c, err := client.Dial(ctx, f.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// rpcError makes a gRPC error readable: "NotFound: no such index [x]".
func rpcError(err error) error {
	if s, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s", s.Code(), s.Message())
	}
	return err
}

func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// enumName turns HEALTH_STATUS_GREEN into "green".
func enumName(s fmt.Stringer, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), prefix))
}

// inlineOrFile returns a flag's value, or the contents of the file it names
// when it starts with @ (as curl's -d @file).
func inlineOrFile(flag, value string) ([]byte, error) {
	path, ok := strings.CutPrefix(value, "@")
	if !ok {
		return []byte(value), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return data, nil
}
