package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// started is every process the suite started, so that a failed wait can
// say which of them died on its own (a restart that could not bind its
// port, a crash) instead of only that the cluster never turned green.
var started procSet

type procSet struct {
	mu  sync.Mutex
	all []*proc
}

func (s *procSet) add(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.all {
		if q == p {
			return
		}
	}
	s.all = append(s.all, p)
}

// died lists the processes that exited without the suite stopping them,
// with their exit status and the end of their log; "" if none did.
func died() string {
	started.mu.Lock()
	defer started.mu.Unlock()
	var b strings.Builder
	for _, p := range started.all {
		select {
		case <-p.exit:
		default:
			continue
		}
		if p.stopping.Load() {
			continue
		}
		fmt.Fprintf(&b, "process %s exited on its own (%v); the end of %s:\n%s\n", p.name, p.waitErr, p.log, logTail(p.log, 20))
	}
	return b.String()
}

// logTail is the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
