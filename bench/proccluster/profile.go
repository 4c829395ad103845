package proccluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
)

// FetchProfile saves what a node serving the Go profiler on addr (its
// --metrics-listen with --enable-pprof) records over the next seconds
// into path: kind "profile" is a CPU profile, "trace" an execution trace
// (`go tool trace -pprof=sync|net|syscall|sched` turns it into profiles
// of where goroutines waited).
func FetchProfile(ctx context.Context, addr, kind string, seconds int, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, seconds)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
