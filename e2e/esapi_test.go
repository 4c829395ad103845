package e2e

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The Elasticsearch-compatible HTTP API, exercised by clients no one here
// wrote: the official Elasticsearch Python client (its tests under
// testdata/esapi/python, in the venv scripts/tools.sh python-venv makes)
// and curl scripts following Elasticsearch's reference examples
// (testdata/esapi/curl), each against a fresh `sluice dev` serving the
// HTTP API. Nothing is skipped: without python3, its venv module or curl
// the specs fail saying what is missing.
var _ = Describe("the Elasticsearch-compatible HTTP API", Ordered, func() {
	// dev runs `sluice dev` in a new directory and returns its HTTP
	// API's URL once it answers.
	dev := func() string {
		GinkgoHelper()
		_, addr := startDev(GinkgoT().TempDir())
		url := "http://" + addr
		Eventually(func() (int, error) {
			resp, err := http.Get(url + "/_cluster/health")
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}, 30*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK))
		return url
	}

	It("passes the official Elasticsearch Python client's tests", func() {
		venv, err := exec.Command("../scripts/tools.sh", "python-venv").Output()
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		Expect(err).NotTo(HaveOccurred(), "scripts/tools.sh python-venv (the Python environment of these tests) failed:\n%s", stderr)
		url := dev()
		var out bytes.Buffer
		pytest := exec.Command(filepath.Join(strings.TrimSpace(string(venv)), "bin", "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "testdata/esapi/python")
		pytest.Env = append(os.Environ(), "ES_URL="+url)
		pytest.Stdout, pytest.Stderr = &out, &out
		err = pytest.Run()
		GinkgoWriter.Print(out.String())
		Expect(err).NotTo(HaveOccurred(), "pytest failed:\n%s", out.String())
		Expect(out.String()).NotTo(ContainSubstring("skipped"), "no test may be skipped")
	})

	It("answers the curl examples of Elasticsearch's reference", func() {
		_, err := exec.LookPath("curl")
		Expect(err).NotTo(HaveOccurred(), "curl is needed for the curl scripts of testdata/esapi/curl")
		scripts, err := filepath.Glob("testdata/esapi/curl/*.sh")
		Expect(err).NotTo(HaveOccurred())
		scripts = slices.DeleteFunc(scripts, func(s string) bool { return filepath.Base(s) == "lib.sh" })
		Expect(len(scripts)).To(BeNumerically(">=", 7))
		url := dev()
		for _, s := range scripts {
			var out bytes.Buffer
			cmd := exec.Command("bash", s)
			cmd.Env = append(os.Environ(), "ES="+url)
			cmd.Stdout, cmd.Stderr = &out, &out
			Expect(cmd.Run()).To(Succeed(), "%s:\n%s", s, out.String())
		}
	})
})
