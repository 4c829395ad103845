package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/sluice-search/sluice/client"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
	"github.com/sluice-search/sluice/security/pki"
	"github.com/sluice-search/sluice/security/tlsconf"
)

// The secure path over real processes: `sluice dev --secure --nodes 0`
// (etcd over TLS with client certificates, a coordinator with TLS and
// authentication) and standalone `sluice node` processes joining with
// certificates of its CA.
var _ = Describe("secure cluster", Ordered, func() {
	var dir, addr, tlsDir, adminKey string
	var dev *proc
	var nodes []*proc

	// cli runs the CLI against the secure coordinator with env added.
	cli := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(c.sluice, append(args, "--addr", addr)...)
		cmd.Env = append(append(os.Environ(), "SLUICE_CACERT=", "SLUICE_API_KEY=", "SLUICE_CERT=", "SLUICE_KEY="), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	admin := func() []string {
		return []string{"SLUICE_CACERT=" + filepath.Join(tlsDir, "ca.crt"), "SLUICE_API_KEY=" + adminKey}
	}
	startNode := func(id, cert, key string) *proc {
		p := &proc{name: id, bin: c.sluice, log: filepath.Join(dir, id+".log"), args: []string{"node",
			"--etcd", etcdURLOf(dir), "--listen", fmt.Sprintf("127.0.0.1:%d", freePort()),
			"--data-dir", filepath.Join(dir, id), "--node-id", id, "--log-level", "info",
			"--cert-file", cert, "--key-file", key, "--trusted-ca-file", filepath.Join(tlsDir, "ca.crt")}}
		p.start()
		nodes = append(nodes, p)
		return p
	}
	registered := func() []string {
		out, err := cli(admin(), "state", "--json")
		if err != nil {
			return nil
		}
		var ids []string
		for _, line := range strings.Split(out, "\n") {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), `"id": "`); ok {
				ids = append(ids, strings.TrimSuffix(strings.TrimSuffix(id, ","), `"`))
			}
		}
		return ids
	}

	BeforeAll(func() {
		var err error
		dir, err = os.MkdirTemp("", "sluice-e2e-secure-")
		Expect(err).NotTo(HaveOccurred())
		addr = fmt.Sprintf("127.0.0.1:%d", freePort())
		etcd := fmt.Sprintf("https://127.0.0.1:%d", freePort())
		Expect(os.WriteFile(filepath.Join(dir, "etcd.url"), []byte(etcd), 0o644)).To(Succeed())
		tlsDir = filepath.Join(dir, "dev", "tls")
		dev = &proc{name: "dev", bin: c.sluice, log: filepath.Join(dir, "dev.log"), args: []string{"dev", "--secure", "--nodes", "0",
			"--data-dir", filepath.Join(dir, "dev"), "--listen", addr, "--etcd-listen", etcd, "--log-level", "info",
			"--http-listen", "127.0.0.1:0"}} // not the default 9201, which another cluster may hold
		dev.start()
		DeferCleanup(func() {
			for _, p := range nodes {
				p.kill(syscall.SIGTERM)
			}
			dev.kill(syscall.SIGTERM)
			if !CurrentSpecReport().Failed() {
				os.RemoveAll(dir)
			}
		})
		Eventually(func() error {
			b, err := os.ReadFile(filepath.Join(tlsDir, "admin.apikey"))
			adminKey = strings.TrimSpace(string(b))
			return err
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "sluice dev --secure wrote its admin key")
		out, err := os.ReadFile(dev.log)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(ContainSubstring("secure: TLS everywhere"))
		for _, id := range []string{"node-1", "node-2"} {
			startNode(id, filepath.Join(tlsDir, "cluster.crt"), filepath.Join(tlsDir, "cluster.key"))
		}
		Eventually(registered, 60*time.Second, 200*time.Millisecond).Should(ConsistOf("node-1", "node-2"), "nodes joined over TLS")
	})

	It("serves authenticated clients over TLS, shards on nodes reached over mutual TLS", func() {
		out, err := cli(admin(), "index", "create", "books", "--shards", "2")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = cli(admin(), "health", "--wait-for", "green", "--wait-timeout", "30s")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = cli(admin(), "auth", "whoami")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("roles: admin"))
	})

	It("refuses a client without TLS, without a key, or with a bad key", func() {
		out, err := cli(nil, "index", "list")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("does it serve TLS"))
		out, err = cli([]string{"SLUICE_CACERT=" + filepath.Join(tlsDir, "ca.crt")}, "index", "list")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Unauthenticated"))
		out, err = cli([]string{"SLUICE_CACERT=" + filepath.Join(tlsDir, "ca.crt"), "SLUICE_API_KEY=abc:def"}, "index", "list")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("invalid API key"))
	})

	It("lets a read-only key read but not write or delete, and stops a revoked key", func() {
		out, err := cli(admin(), "auth", "put-role", "books-ro", "--index", "books:read,monitor")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = cli(admin(), "auth", "create-key", "--name", "ro", "--role", "books-ro", "--json")
		Expect(err).NotTo(HaveOccurred(), out)
		id, encoded := jsonField(out, "id"), jsonField(out, "encoded")
		ro := []string{"SLUICE_CACERT=" + filepath.Join(tlsDir, "ca.crt"), "SLUICE_API_KEY=" + encoded}
		out, err = cli(ro, "search", "books")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = cli(ro, "index", "delete", "books")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("PermissionDenied"))
		Expect(out).To(ContainSubstring("[manage]"))
		out, err = cli(ro, "bulk", writeDocs(dir), "--index", "books", "--id-field", "")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("[write]"))

		out, err = cli(admin(), "auth", "revoke-key", id)
		Expect(err).NotTo(HaveOccurred(), out)
		// The revoking coordinator is the one serving: refused at once;
		// any other within --auth-cache-ttl.
		out, err = cli(ro, "search", "books")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("Unauthenticated"))
		log, _ := os.ReadFile(dev.log)
		Expect(string(log)).To(ContainSubstring("event=access_denied"))
		Expect(string(log)).To(ContainSubstring("event=api_key_revoked"))
	})

	It("keeps a node with a certificate of another CA out", func() {
		other, err := pki.NewCA("other CA", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		cert, key, err := other.Issue(pki.Subject{CommonName: "intruder", Organization: []string{tlsconf.ClusterOrganization}, Hosts: []string{"127.0.0.1"}})
		Expect(err).NotTo(HaveOccurred())
		odir := filepath.Join(dir, "other")
		Expect(pki.WritePair(odir, "intruder", cert, key)).To(Succeed())
		p := startNode("intruder", filepath.Join(odir, "intruder.crt"), filepath.Join(odir, "intruder.key"))
		Consistently(registered, 5*time.Second, 500*time.Millisecond).ShouldNot(ContainElement("intruder"))
		p.kill(syscall.SIGKILL)
	})

	It("answers no RPC of a data node to a client without the cluster's certificate", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		src, err := tlsconf.Load(tlsconf.Files{TrustedCAFile: filepath.Join(tlsDir, "ca.crt")}, false, nil)
		Expect(err).NotTo(HaveOccurred())
		// A data node is no coordinator; the handshake fails before that.
		_, err = client.Connect(ctx, nodeAddr(nodes[0]), src.DialOptions()...)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring("not the Sluice API"))
		_ = sluicev1.Sluice_ServiceDesc
	})
})

// etcdURLOf is the secure suite's etcd URL, kept in its work directory.
func etcdURLOf(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "etcd.url"))
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// nodeAddr is the --listen of a node process.
func nodeAddr(p *proc) string {
	for i, a := range p.args {
		if a == "--listen" {
			return p.args[i+1]
		}
	}
	Fail("no --listen")
	return ""
}

// jsonField picks a top-level string field out of indented JSON.
func jsonField(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), `"`+name+`": "`); ok {
			return strings.TrimSuffix(strings.TrimSuffix(v, ","), `"`)
		}
	}
	Fail("no " + name + " in " + out)
	return ""
}

// writeDocs writes a two-document bulk file.
func writeDocs(dir string) string {
	path := filepath.Join(dir, "docs.jsonl")
	Expect(os.WriteFile(path, []byte("{\"t\":\"a\"}\n{\"t\":\"b\"}\n"), 0o644)).To(Succeed())
	return path
}
