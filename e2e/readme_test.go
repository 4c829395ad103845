package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// step is one command of the README's session and the lines it shows.
type step struct {
	cmd  string
	want []string
}

// readmeSession reads the console block that follows the readme-session
// marker: "$ " lines are commands, the lines after one are what it prints.
func readmeSession(readme []byte) []step {
	GinkgoHelper()
	_, after, ok := bytes.Cut(readme, []byte("<!-- readme-session"))
	Expect(ok).To(BeTrue(), "README.md has no readme-session marker")
	_, block, ok := bytes.Cut(after, []byte("```console\n"))
	Expect(ok).To(BeTrue(), "no console block after the readme-session marker")
	block, _, ok = bytes.Cut(block, []byte("\n```"))
	Expect(ok).To(BeTrue(), "the console block does not end")
	var steps []step
	sc := bufio.NewScanner(bytes.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			steps = append(steps, step{cmd: cmd})
			continue
		}
		Expect(steps).NotTo(BeEmpty(), "output before the first command: %q", line)
		steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
	}
	return steps
}

// shownLine matches an output line the README shows: as written, but
// with "…" standing for anything, and trailing spaces ignored.
func shownLine(shown string) *regexp.Regexp {
	parts := strings.Split(strings.TrimRight(shown, " "), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// expectShown checks that every non-blank line shown is printed, in order
// (a terminal redraws progress lines that a pipe keeps, so printed lines
// may lie between them).
func expectShown(s step, out string) {
	GinkgoHelper()
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	i := 0
	for _, w := range s.want {
		if strings.TrimSpace(w) == "" {
			continue
		}
		re := shownLine(w)
		for i < len(got) && !re.MatchString(strings.TrimRight(got[i], " ")) {
			i++
		}
		Expect(i).To(BeNumerically("<", len(got)), "$ %s\nthe README shows\n  %s\nwhich is not printed (in order):\n%s", s.cmd, w, out)
		i++
	}
}

// The README's first session, run as a reader runs it: in an empty
// directory (no ../shared beside it), against `sluice dev` started there,
// each command by bash with the built binary first on PATH.
var _ = Describe("README", func() {
	It("runs its first session on a fresh directory and prints what it shows", func() {
		readme, err := os.ReadFile("../README.md")
		Expect(err).NotTo(HaveOccurred())
		steps := readmeSession(readme)
		Expect(len(steps)).To(BeNumerically(">=", 10))

		dir := GinkgoT().TempDir()
		addr, _ := startDev(dir)

		env := append(os.Environ(), "PATH="+filepath.Dir(c.sluice)+":"+os.Getenv("PATH"), "SLUICE_ADDR="+addr)
		for _, s := range steps {
			var out bytes.Buffer
			cmd := exec.Command("bash", "-c", s.cmd)
			cmd.Dir, cmd.Env = dir, env
			cmd.Stdout, cmd.Stderr = &out, &out // one pipe: the order the reader sees
			_ = cmd.Run()                       // the README shows failures too
			expectShown(s, out.String())
		}
		// The session wrote nothing outside its directory but sluice-data
		// and the export.
		entries, err := os.ReadDir(dir)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		Expect(names).To(ConsistOf("sluice-data", "products-export.jsonl"))
	})
})

// startDev runs `sluice dev` in dir (its data under dir/sluice-data, as a
// reader's would be; its log beside dir), with more flags if given
// (--secure: the HTTP API is HTTPS), until the spec (or the Ordered
// container) ends, and returns its gRPC and HTTP API addresses once it
// serves. It binds port 0 for both and they are read from its banner: a
// port picked beforehand could be taken before it binds it (ports_test.go).
func startDev(dir string, flags ...string) (grpcAddr, httpAddr string) {
	GinkgoHelper()
	log, err := os.Create(filepath.Join(dir, "..", filepath.Base(dir)+"-dev.log"))
	Expect(err).NotTo(HaveOccurred())
	scheme := "http"
	if slices.Contains(flags, "--secure") {
		scheme = "https"
	}
	dev := exec.Command(c.sluice, append([]string{"dev", "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"}, flags...)...)
	dev.Dir, dev.Stdout, dev.Stderr = dir, log, log
	Expect(dev.Start()).To(Succeed())
	exited := make(chan struct{})
	go func() { _ = dev.Wait(); log.Close(); close(exited) }()
	DeferCleanup(func() {
		_ = dev.Process.Signal(syscall.SIGINT)
		Eventually(exited).WithTimeout(30 * time.Second).Should(BeClosed())
	})
	// Each address is followed by "   e.g.": a line read half-written
	// does not match.
	banner := regexp.MustCompile(`coordinator \(connect here\): (\S+) [\s\S]*Elasticsearch-compatible HTTP API: ` + scheme + `://(\S+) `)
	var m []string
	Eventually(func() (string, error) {
		b, err := os.ReadFile(log.Name())
		m = banner.FindStringSubmatch(string(b))
		return string(b), err
	}, 60*time.Second, 100*time.Millisecond).Should(MatchRegexp(banner.String()), "sluice dev serving")
	return m[1], m[2]
}
