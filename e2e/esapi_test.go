package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/sluice-search/sluice/client"
	"github.com/sluice-search/sluice/coordinator/esapi"
	"github.com/sluice-search/sluice/devcluster"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// The Elasticsearch-compatible HTTP API, exercised by clients no one here
// wrote: the official Elasticsearch Python client (its tests under
// testdata/esapi/python, in the venv scripts/tools.sh python-venv makes)
// and curl scripts following Elasticsearch's reference examples
// (testdata/esapi/curl); and Sluice's own Python client (clients/python,
// installed by pip, its tests beside it) over gRPC; all against one
// `sluice dev` serving the HTTP API and metrics. Then its /metrics must
// show that together they called every endpoint the HTTP API serves (the
// ones docs/elasticsearch-api.md marks supported, a unit test of
// coordinator/esapi says) with success, and the request histograms a
// Sluice process keeps. Nothing is skipped: without python3, its venv
// module or curl the specs fail saying what is missing.
var _ = Describe("the Elasticsearch-compatible HTTP API and the Python clients", Ordered, func() {
	var url, grpcAddr, metricsURL string

	BeforeAll(func() {
		metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort())
		// A small bulk budget (4 bulks of at most 4 MiB at once), so the
		// Python client's overload test meets refusals; the other suites
		// send fewer and smaller bulks.
		var addr string
		grpcAddr, addr = startDev(GinkgoT().TempDir(), "--metrics-listen", metricsAddr, "--max-inflight-bulk-bytes", "16MiB")
		url, metricsURL = "http://"+addr, "http://"+metricsAddr+"/metrics"
		Eventually(func() (int, error) {
			resp, err := http.Get(url + "/_cluster/health")
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}, 30*time.Second, 100*time.Millisecond).Should(Equal(http.StatusOK))
	})

	It("passes the official Elasticsearch Python client's tests", func() {
		runPytest("testdata/esapi/python", "ES_URL="+url)
	})

	It("answers the curl examples of Elasticsearch's reference", func() {
		_, err := exec.LookPath("curl")
		Expect(err).NotTo(HaveOccurred(), "curl is needed for the curl scripts of testdata/esapi/curl")
		scripts, err := filepath.Glob("testdata/esapi/curl/*.sh")
		Expect(err).NotTo(HaveOccurred())
		scripts = slices.DeleteFunc(scripts, func(s string) bool { return filepath.Base(s) == "lib.sh" })
		Expect(len(scripts)).To(BeNumerically(">=", 8))
		for _, s := range scripts {
			var out bytes.Buffer
			cmd := exec.Command("bash", s)
			cmd.Env = append(os.Environ(), "ES="+url)
			cmd.Stdout, cmd.Stderr = &out, &out
			Expect(cmd.Run()).To(Succeed(), "%s:\n%s", s, out.String())
		}
	})

	It("passes the tests of Sluice's Python client, installed by pip", func() {
		src, target := installPythonClient()
		runPytest(filepath.Join(src, "tests"), "SLUICE_ADDR="+grpcAddr, "PYTHONPATH="+target)
	})

	It("was called at every endpoint it serves, each answering with success", func() {
		served := map[string]bool{}
		for _, s := range scrape(metricsURL, "sluice_http_request_duration_seconds_count") {
			if strings.HasPrefix(s.labels["code"], "2") && s.value > 0 {
				served[s.labels["method"]+" "+s.labels["route"]] = true
			}
		}
		var missed []string
		for _, e := range esapi.New(esapi.Config{}).Endpoints() {
			if !served[e] {
				missed = append(missed, e)
			}
		}
		Expect(missed).To(BeEmpty(), "endpoints no client suite called with success (add them to testdata/esapi)")
	})

	It("keeps the request histograms of its gRPC servers and indices, and every metric of the dashboard", func() {
		expectRequestMetrics(metricsURL, "sluice.v1.Sluice", "sluice.node.v1.Node")
		expectIndexMetrics(metricsURL, map[string]string{"search": "py-search", "bulk": "pyc-bulk", "refresh": "py-bulk"})
		exprs := expectDashboardMetrics(metricsURL)
		Expect(exprs).To(ContainElement(ContainSubstring("sluice_http_request_duration_seconds_bucket")), "the dashboard graphs the HTTP API's latency")
		Expect(exprs).To(ContainElement(ContainSubstring("sluice_http_request_duration_seconds_count")), "the dashboard graphs the HTTP API's requests")
	})
})

// installPythonClient pip-installs clients/python into a directory of
// its own (target, for PYTHONPATH) from a copy of its sources (src):
// setuptools writes build/ and *.egg-info beside the sources.
func installPythonClient() (src, target string) {
	GinkgoHelper()
	src, target = GinkgoT().TempDir(), GinkgoT().TempDir()
	Expect(os.CopyFS(src, os.DirFS("../clients/python"))).To(Succeed())
	out, err := exec.Command(filepath.Join(pythonVenv(), "bin", "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
		"--no-deps", "--no-build-isolation", "--no-index", "--target", target, src).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "pip install clients/python:\n%s", out)
	return src, target
}

// pythonVenv is the Python environment scripts/tools.sh python-venv makes.
func pythonVenv() string {
	GinkgoHelper()
	venv, err := exec.Command("../scripts/tools.sh", "python-venv").Output()
	var stderr []byte
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = ee.Stderr
	}
	Expect(err).NotTo(HaveOccurred(), "scripts/tools.sh python-venv (the Python environment of these tests) failed:\n%s", stderr)
	return strings.TrimSpace(string(venv))
}

// runPytest runs pytest on dir in the Python environment of
// scripts/tools.sh python-venv, with env added; no test may be skipped.
func runPytest(dir string, env ...string) {
	GinkgoHelper()
	var out bytes.Buffer
	pytest := exec.Command(filepath.Join(pythonVenv(), "bin", "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", dir)
	pytest.Env = append(os.Environ(), env...)
	pytest.Stdout, pytest.Stderr = &out, &out
	start := time.Now()
	err := pytest.Run()
	GinkgoWriter.Printf("pytest %s (%s):\n%s", dir, time.Since(start).Round(time.Millisecond), out.String())
	Expect(err).NotTo(HaveOccurred(), "pytest failed:\n%s", out.String())
	Expect(out.String()).NotTo(ContainSubstring("skipped"), "no test may be skipped")
}

// The HTTP API of `sluice dev --secure`: HTTPS with the dev CA, every
// request authenticated and authorized by the coordinator's guard. The
// official Python client (api_key=, ca_certs=), curl and Sluice's own
// Python client (over gRPC), with an admin key and a read-only one made
// through the Auth service.
var _ = Describe("the HTTP API of a secure cluster", Ordered, func() {
	var env, clientEnv []string

	BeforeAll(func() {
		dir := GinkgoT().TempDir()
		grpcAddr, httpAddr := startDev(dir, "--secure", "--nodes", "1")
		tlsDir := filepath.Join(dir, "sluice-data", "tls")
		ca := filepath.Join(tlsDir, devcluster.CAFile)
		adminKey, err := os.ReadFile(filepath.Join(tlsDir, devcluster.AdminKeyFile))
		Expect(err).NotTo(HaveOccurred())
		src, err := tlsconf.Load(tlsconf.Files{TrustedCAFile: ca}, false, nil)
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := client.Connect(ctx, grpcAddr, append(src.DialOptions(), client.WithAPIKey(strings.TrimSpace(string(adminKey))))...)
		Expect(err).NotTo(HaveOccurred())
		defer admin.Close()
		ac := sluicev1.NewAuthClient(admin.Conn())
		_, err = ac.PutRole(ctx, &sluicev1.PutRoleRequest{Role: &sluicev1.Role{Name: "sec-reader", Indices: []*sluicev1.IndexPrivileges{
			{Names: []string{"sec-*"}, Privileges: []sluicev1.Privilege{sluicev1.Privilege_PRIVILEGE_READ, sluicev1.Privilege_PRIVILEGE_MONITOR}}}}})
		Expect(err).NotTo(HaveOccurred())
		k, err := ac.CreateApiKey(ctx, &sluicev1.CreateApiKeyRequest{Name: "sec-reader", Roles: []string{"sec-reader"}})
		Expect(err).NotTo(HaveOccurred())
		env = []string{"ES_URL=https://" + httpAddr, "ES_CA=" + ca, "ES_ADMIN_KEY=" + strings.TrimSpace(string(adminKey)), "ES_READ_KEY=" + k.GetEncoded()}
		clientEnv = []string{"SLUICE_ADDR=" + grpcAddr, "SLUICE_CACERT=" + ca, "SLUICE_API_KEY=" + strings.TrimSpace(string(adminKey)),
			"SLUICE_READ_KEY=" + k.GetEncoded(), "SLUICE_CERT=" + filepath.Join(tlsDir, devcluster.AdminCert), "SLUICE_KEY=" + filepath.Join(tlsDir, devcluster.AdminKey)}
	})

	It("serves Sluice's Python client with TLS, API keys and client certificates", func() {
		src, target := installPythonClient()
		runPytest(filepath.Join(src, "tests_secure"), append(clientEnv, "PYTHONPATH="+target)...)
	})

	It("passes the official Elasticsearch Python client's tests with API keys over TLS", func() {
		runPytest("testdata/esapi/python-secure", env...)
	})

	It("answers curl as Elasticsearch's security does", func() {
		_, err := exec.LookPath("curl")
		Expect(err).NotTo(HaveOccurred(), "curl is needed for testdata/esapi/curl-secure")
		var out bytes.Buffer
		cmd := exec.Command("bash", "testdata/esapi/curl-secure/secure.sh")
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = &out, &out
		Expect(cmd.Run()).To(Succeed(), "curl-secure/secure.sh:\n%s", out.String())
	})
})
