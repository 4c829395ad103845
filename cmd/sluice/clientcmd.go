package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// clientFlags are the connection flags of every client command.
type clientFlags struct {
	addr    string
	timeout time.Duration
	credFlags
}

// credFlags are TLS and credentials for a secure cluster, of client
// commands and the operator: the CA to verify the coordinator with, a
// client certificate and key, an API key.
type credFlags struct {
	cacert, cert, key, apiKey string
}

func (f *credFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.cacert, "cacert", os.Getenv("SLUICE_CACERT"), "CA bundle (PEM) to verify the coordinator's certificate with; connects over TLS (default $SLUICE_CACERT)")
	fl.StringVar(&f.cert, "cert", os.Getenv("SLUICE_CERT"), "client certificate (PEM) to authenticate with; connects over TLS (default $SLUICE_CERT)")
	fl.StringVar(&f.key, "key", os.Getenv("SLUICE_KEY"), "private key (PEM) of --cert (default $SLUICE_KEY)")
	fl.StringVar(&f.apiKey, "api-key", "", "API key to authenticate with: the encoded key `sluice auth create-key` prints, or id:secret; needs TLS (default $SLUICE_API_KEY)")
}

// Help texts of --timeout: what it bounds differs between commands.
const (
	timeoutWhole = "time limit for the command, once connected"
	timeoutCalls = "time limit of each call to the cluster (--wait follows a task for as long as it runs)"
)

// register adds --addr and --timeout (with help saying what it bounds;
// "" adds no --timeout, for commands that run as long as their input).
func (f *clientFlags) register(cmd *cobra.Command, timeoutHelp string) {
	def := os.Getenv("SLUICE_ADDR")
	if def == "" {
		def = client.DefaultAddr
	}
	cmd.PersistentFlags().StringVar(&f.addr, "addr", def, "coordinator address (default from $SLUICE_ADDR)")
	f.credFlags.register(cmd.PersistentFlags())
	f.timeout = 30 * time.Second
	if timeoutHelp != "" {
		cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", f.timeout, timeoutHelp)
	}
}

// connect connects to the coordinator at --addr, failing within a few
// seconds (client.ConnectTimeout), whatever --timeout says, when there is
// no Sluice there.
func (f *clientFlags) connect(cmd *cobra.Command) (*client.Client, error) {
	opts, err := f.dialOptions()
	if err != nil {
		return nil, err
	}
	c, err := client.Connect(cmd.Context(), f.addr, opts...)
	if err != nil {
		return nil, rpcError(err)
	}
	return c, nil
}

// dialOptions are TLS and the API key, from the flags and environment.
// The key is read from $SLUICE_API_KEY rather than given a default, so
// --help never prints it.
func (f *credFlags) dialOptions() ([]grpc.DialOption, error) {
	var opts []grpc.DialOption
	files := tlsconf.Files{CertFile: f.cert, KeyFile: f.key, TrustedCAFile: f.cacert}
	if files.Enabled() {
		src, err := tlsconf.Load(files, false, nil)
		if err != nil {
			return nil, fmt.Errorf("--cacert/--cert/--key: %w", err)
		}
		opts = append(opts, src.DialOptions()...)
	}
	key := f.apiKey
	if key == "" {
		key = os.Getenv("SLUICE_API_KEY")
	}
	if key != "" {
		if !files.Enabled() {
			return nil, fmt.Errorf("an API key is sent over TLS only: give --cacert (or $SLUICE_CACERT) with the CA of the coordinator's certificate")
		}
		opts = append(opts, client.WithAPIKey(key))
	}
	return opts, nil
}

// call connects and runs fn with the connection and a context bounded by
// --timeout, closing both after. Running out of --timeout is said so, not
// reported as a connection problem.
func (f *clientFlags) call(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	c, err := f.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	err = fn(ctx, c)
	if err != nil && cmd.Context().Err() == nil && timedOut(ctx, err) {
		return fmt.Errorf("%s did not answer within --timeout %s; give it longer with --timeout", f.addr, f.timeout)
	}
	return err
}

// timedOut says whether err is ctx's deadline passing: ctx says so, or
// the call ended DEADLINE_EXCEEDED at the deadline (the server, told the
// deadline, may give up a moment before the client's timer fires).
func timedOut(ctx context.Context, err error) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && status.Code(err) == codes.DeadlineExceeded && time.Until(dl) < 100*time.Millisecond
}

// rpcError makes a gRPC error readable: "NotFound: no such index [x]".
// The error keeps its status, for call to tell a deadline from the rest.
func rpcError(err error) error {
	if s, ok := status.FromError(err); ok {
		return statusError{s}
	}
	return err
}

type statusError struct{ s *status.Status }

func (e statusError) Error() string              { return fmt.Sprintf("%s: %s", e.s.Code(), e.s.Message()) }
func (e statusError) GRPCStatus() *status.Status { return e.s }

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

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
