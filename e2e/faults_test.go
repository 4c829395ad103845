package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-search/sluice/client/bulkindexer"
	"github.com/sluice-search/sluice/node/engine/translog"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// The fault suite damages what a data node keeps on disk, with real
// processes, and checks what the user sees: a damaged acknowledged
// translog record fails its shard naming file and offset while a torn
// tail is cut; a damaged segment file of every type is found by the
// scrubber within its interval; a restart with a large translog replays
// it at a measured rate. Every acknowledged document is counted on the
// client side and found after recovery wherever the shard did not fail.

// corpusDoc is a line of the corpus slice.
type corpusDoc struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

var _ = Describe("faults on a 3-node cluster", Ordered, func() {
	ctx := context.Background()
	var docs []corpusDoc

	BeforeAll(func() {
		f, err := os.Open(corpusFile)
		Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var d corpusDoc
			Expect(json.Unmarshal(sc.Bytes(), &d)).To(Succeed())
			docs = append(docs, d)
		}
		Expect(sc.Err()).NotTo(HaveOccurred())
	})
	source := func(i int) []byte {
		d := docs[i%len(docs)]
		b, err := json.Marshal(map[string]any{"title": d.Title, "body": d.Body, "tag": fmt.Sprint("t", i%13), "n": i})
		Expect(err).NotTo(HaveOccurred())
		return b
	}
	// bulkAcked indexes docs [from, to) into index in bulks of 50 and
	// returns the acknowledged ids by shard.
	bulkAcked := func(index string, from, to int) map[int32][]string {
		acked := map[int32][]string{}
		for lo := from; lo < to; lo += 50 {
			var items []*sluicev1.BulkItem
			for i := lo; i < min(lo+50, to); i++ {
				items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("d%06d", i), Source: source(i)})
			}
			resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: index, Items: items})
			Expect(err).NotTo(HaveOccurred())
			for _, r := range resp.Items {
				Expect(r.Status).To(Equal(sluicev1.BulkItemStatus_BULK_ITEM_STATUS_CREATED), "%v", r)
				acked[r.Shard] = append(acked[r.Shard], r.Id)
			}
		}
		return acked
	}

	AfterAll(func() {
		for _, name := range []string{"tl-last", "tl-mid", "tl-torn", "seg", "rseg", "big"} {
			_, _ = cl.DeleteIndex(ctx, &sluicev1.DeleteIndexRequest{Name: name})
		}
	})

	It("fails a shard whose acknowledged translog records are damaged, naming file and offset, and cuts a torn tail keeping every acknowledged document", func() {
		victim := c.nodes[0]
		names := []string{"tl-last", "tl-mid", "tl-torn"}
		acked := map[string]map[int32][]string{}
		for _, name := range names {
			createIndex(name, 3, nil, nil) // one shard on each node (placement spreads an index)
			acked[name] = bulkAcked(name, 0, 600)
		}
		dirs := map[string]string{}
		shards := map[string]int32{}
		for _, name := range names {
			shards[name], dirs[name] = c.shardOn(name, victim.name)
		}
		victim.kill(syscall.SIGKILL)

		// The current generation and the offset its checkpoint records as
		// synced: the end of the last acknowledged record.
		tlog := func(name string) (string, int64) {
			ckp, err := translog.ReadCheckpoint(filepath.Join(dirs[name], "translog"))
			Expect(err).NotTo(HaveOccurred())
			Expect(ckp.Ops).To(BeNumerically(">", 10), "%s: records below the checkpoint", name)
			return filepath.Join(dirs[name], "translog", fmt.Sprintf("translog-%d.tlog", ckp.Generation)), ckp.Offset
		}
		lastFile, lastSynced := tlog("tl-last")
		flipByte(lastFile, lastSynced-1)
		midFile, midSynced := tlog("tl-mid")
		flipByte(midFile, midSynced/2)
		// A record cut short past the checkpoint: a length saying 1000
		// bytes follow, and 100 do.
		tornFile, tornSynced := tlog("tl-torn")
		torn := make([]byte, 12+100)
		binary.LittleEndian.PutUint32(torn, 1000)
		appendFile(tornFile, torn)
		victim.start()

		waitGreen("tl-torn")
		Expect(countIDs("tl-torn", flatten(acked["tl-torn"]))).To(Equal(int64(600)), "every acknowledged document after the torn tail was cut")
		Expect(c.logOf(victim)).To(MatchRegexp(`msg="translog: truncated a torn tail past the last sync".* file=\S*%s offset=%d `,
			regexp.QuoteMeta(filepath.Base(tornFile)), tornSynced), "cut exactly at the checkpoint")

		// The damaged shards are FAILED naming the file and the offset of
		// the damaged record, which is below the synced offset and within a
		// record's reach of the flipped byte.
		at := regexp.MustCompile(`(translog-\d+\.tlog): at offset (\d+): `)
		for _, tc := range []struct {
			name    string
			file    string
			flipped int64
		}{{"tl-last", lastFile, lastSynced - 1}, {"tl-mid", midFile, midSynced / 2}} {
			var reason string
			Eventually(func() sluicev1.ShardState {
				var st sluicev1.ShardState
				st, reason = shardHealth(tc.name, shards[tc.name])
				return st
			}, 30*time.Second, 100*time.Millisecond).Should(Equal(sluicev1.ShardState_SHARD_STATE_FAILED), tc.name)
			m := at.FindStringSubmatch(reason)
			Expect(m).NotTo(BeNil(), "%s: reason %q names no file and offset", tc.name, reason)
			Expect(m[1]).To(Equal(filepath.Base(tc.file)))
			off, _ := strconv.ParseInt(m[2], 10, 64)
			Expect(off).To(And(BeNumerically("<=", tc.flipped), BeNumerically(">", tc.flipped-64<<10)), "%s: %q", tc.name, reason)
			h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{tc.name}})
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Status).To(Equal(sluicev1.HealthStatus_HEALTH_STATUS_RED))
			out, _ := c.cli(coord, "health", tc.name)
			GinkgoWriter.Printf("$ sluice health %s\n%s\n", tc.name, out)
			Expect(out).To(And(ContainSubstring("failed"), ContainSubstring(m[0])), out)

			// The other shards serve every acknowledged document; the
			// failed one is reported, not left out silently.
			var healthy []string
			for sh, ids := range acked[tc.name] {
				if sh != shards[tc.name] {
					healthy = append(healthy, ids...)
				}
			}
			_, err = cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{tc.name}}) // the failed shard fails it
			Expect(err).NotTo(HaveOccurred())
			r, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{tc.name}, TrackTotalHits: -1, Size: proto.Int32(0)})
			Expect(err).NotTo(HaveOccurred())
			Expect(r.Shards.Failed).To(Equal(int32(1)))
			Expect(r.Shards.Failures[0].Error.Reason).To(ContainSubstring(filepath.Base(tc.file)))
			Expect(r.Total.Value).To(Equal(int64(len(healthy))))
		}
	})

	It("finds a damaged file of every type with the scrubber within its interval: the shard fails naming it, searches report it, shard verify too", func() {
		createIndex("seg", 10, nil, &sluicev1.Mapping{Properties: map[string]*sluicev1.FieldMapping{
			"title": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT}, "body": {Type: sluicev1.FieldType_FIELD_TYPE_TEXT},
			"tag": {Type: sluicev1.FieldType_FIELD_TYPE_KEYWORD}, "n": {Type: sluicev1.FieldType_FIELD_TYPE_LONG}}})
		acked := bulkAcked("seg", 0, 2000)
		_, err := cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{"seg"}})
		Expect(err).NotTo(HaveOccurred())
		// Delete every tenth document (the segments get live-docs files).
		live := map[int32]int{}
		for sh, ids := range acked {
			var items []*sluicev1.BulkItem
			for i, id := range ids {
				if i%10 == 0 {
					items = append(items, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_DELETE, Id: id})
				}
			}
			resp, err := cl.Bulk(ctx, &sluicev1.BulkRequest{Index: "seg", Items: items})
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Errors).To(BeFalse())
			live[sh] = len(ids) - len(items)
		}
		// A graceful restart commits every shard: the files are on disk.
		c.restartNodes(syscall.SIGTERM, c.nodes...)
		waitGreen("seg")

		// One file type damaged per shard, on the running nodes; shard 9
		// stays clean.
		types := []string{".smt", ".tim", ".doc", ".pos", ".nvd", ".dvd", ".fdt", ".liv", "segments_"}
		damaged := map[int32]string{}
		for i, typ := range types {
			_, dir := c.locate("seg", int32(i))
			file := largestFile(dir, typ)
			flipByte(file, fileSize(file)/2)
			damaged[int32(i)] = filepath.Base(file)
		}
		flipped := time.Now()
		detected := map[int32]time.Duration{}
		Eventually(func() int {
			h, err := cl.ClusterHealth(ctx, &sluicev1.ClusterHealthRequest{Indices: []string{"seg"}})
			if err != nil {
				return -1
			}
			for _, sh := range h.Indices[0].Shards {
				if name, ok := damaged[sh.Shard]; ok && sh.State == sluicev1.ShardState_SHARD_STATE_FAILED && strings.Contains(sh.Reason, name) {
					if _, seen := detected[sh.Shard]; !seen {
						detected[sh.Shard] = time.Since(flipped)
					}
				}
			}
			return len(detected)
		}, 60*time.Second, 100*time.Millisecond).Should(Equal(len(types)), "every damaged shard FAILED naming its file")
		var slowest time.Duration
		for sh, d := range detected {
			GinkgoWriter.Printf("scrubber: %-12s (shard %d) failed its shard %v after the flip\n", damaged[sh], sh, d.Round(time.Millisecond))
			slowest = max(slowest, d)
		}
		AddReportEntry("scrub detection, slowest of 9 file types", slowest.String())
		// Within the interval, plus the pass that reads the file and the
		// report; generous for a loaded CI machine.
		Expect(slowest).To(BeNumerically("<", 2*scrubInterval+8*time.Second))

		// Searches answer from the clean shard only and report every damaged
		// one, naming its file: no result comes from a damaged file.
		r, err := cl.Search(ctx, &sluicev1.SearchRequest{Indices: []string{"seg"}, TrackTotalHits: -1, Size: proto.Int32(0)})
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Shards.Failed).To(Equal(int32(len(types))))
		for _, f := range r.Shards.Failures {
			Expect(f.Error.Reason).To(ContainSubstring(damaged[f.Shard]))
		}
		Expect(r.Total.Value).To(Equal(int64(live[9])))

		out, err := c.cli(coord, "health", "seg")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = c.cli(coord, "shard", "verify", "seg")
		GinkgoWriter.Printf("$ sluice shard verify seg\n%s\n", out)
		Expect(err).To(HaveOccurred(), "shard verify exits non-zero on damage:\n%s", out)
		Expect(out).To(ContainSubstring("9 of 10 shard copies damaged or failed"))
		for _, name := range damaged {
			Expect(out).To(ContainSubstring(name))
		}
		out, err = c.cli(coord, "shard", "verify", "seg", "--shard", "9", "--deep")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`seg\[9\]\s+node-\d\s+ok`))
	})

	It("finds a damaged file of a replica copy with the scrubber: the copy leaves the in-sync set and recovers from its primary", func() {
		createIndex("rseg", 1, &sluicev1.IndexSettings{NumberOfReplicas: 1}, nil)
		acked := bulkAcked("rseg", 0, 1000)
		// A graceful restart commits every copy: the files are on disk.
		c.restartNodes(syscall.SIGTERM, c.nodes...)
		waitGreen("rseg")
		_, pdir := c.locate("rseg", 0)
		rnode, rdir := c.locateCopy("rseg", 0, false)
		file := largestFile(rdir, ".fdt")
		name := filepath.Base(file)
		want, err := os.ReadFile(filepath.Join(pdir, name))
		Expect(err).NotTo(HaveOccurred(), "the replica holds the primary's file names")
		flipByte(file, fileSize(file)/2)
		flipped := time.Now()

		// The scrubber finds it; the node reports the copy FAILED out of
		// the in-sync set, deletes it and recovers it: the file is the
		// primary's again.
		Eventually(func() bool {
			got, err := os.ReadFile(file)
			return err == nil && bytes.Equal(got, want)
		}, 60*time.Second, 100*time.Millisecond).Should(BeTrue(), "the replica's %s recovered from the primary", name)
		AddReportEntry("damaged replica file found and recovered", time.Since(flipped).Round(time.Millisecond).String())
		Expect(c.logOf(c.proc(rnode))).To(And(ContainSubstring(name), ContainSubstring("failed replica copy deleted; recovering it from the primary")))
		waitGreen("rseg")
		out, err := c.cli(coord, "shard", "verify", "rseg", "--deep")
		GinkgoWriter.Printf("$ sluice shard verify rseg --deep\n%s\n", out)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?s)rseg\[0\]\s+node-\d\s+ok.*rseg\[0\]\s+node-\d\s+ok`), "both copies verified, replica included")
		Expect(count("rseg", nil)).To(Equal(int64(len(acked[0]))))
	})

	It("restarts with a large translog: the translog stays bounded by the flush threshold, replay is measured, writes come back within seconds and nothing acknowledged is lost", func() {
		t0 := time.Now()
		step := func(what string) { GinkgoWriter.Printf("%6.1fs %s\n", time.Since(t0).Seconds(), what) }
		createIndex("big", 1, nil, nil)
		nodeID, dir := c.locate("big", 0)
		victim := c.proc(nodeID)
		uuid := filepath.Base(filepath.Dir(dir))
		tlDir := filepath.Join(dir, "translog")
		base := slices.Clone(victim.args)
		DeferCleanup(func() { // the suite's node again
			victim.args = base
			c.restartNodes(syscall.SIGTERM, victim)
		})
		// The default scrub interval on the victim: the suite's 2s one would
		// re-read the growing index all the time and skew the measurement.
		victim.args = append(slices.Clone(base), "--scrub-interval", "24h")
		c.restartNodes(syscall.SIGTERM, victim)
		waitGreen("big")
		step("restarted with the default scrub interval")

		var mu sync.Mutex
		var acked []string // every acknowledged id, loaded documents and probes
		next := 0
		var sentTotal int64 // source bytes sent
		// loadAndKill indexes until stop says so, then SIGKILLs the victim
		// while the bulks still flow; it returns the largest translog seen,
		// its size at the kill, and a channel closed once the batches in
		// flight at the kill have ended (they wait for the shard to come
		// back, and fail or are acknowledged then).
		loadAndKill := func(stop func(sent, translog int64) bool) (peak, atKill int64, flushed chan struct{}) {
			ix, err := bulkindexer.New(bulkindexer.Config{Client: cl, Index: "big", BatchBytes: 2 << 20, Workers: 2, MaxRetries: 1,
				OnSuccess: func(it *sluicev1.BulkItem, _ *sluicev1.BulkItemResult) {
					mu.Lock()
					acked = append(acked, it.Id)
					mu.Unlock()
				},
				OnError: func(*sluicev1.BulkItem, *sluicev1.BulkItemResult) {}})
			Expect(err).NotTo(HaveOccurred())
			var sent int64
			for i := 0; ; i++ {
				if i%100 == 0 {
					tl := dirSize(tlDir)
					peak = max(peak, tl)
					if stop(sent, tl) {
						break
					}
				}
				src := source(next)
				sent += int64(len(src))
				sentTotal += int64(len(src))
				Expect(ix.Add(ctx, &sluicev1.BulkItem{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: fmt.Sprintf("b%07d", next), Source: src})).To(Succeed())
				next++
			}
			step("loaded")
			victim.kill(syscall.SIGKILL)
			atKill = dirSize(tlDir)
			flushed = make(chan struct{})
			go func() {
				defer close(flushed)
				_ = ix.Close(ctx)
			}()
			return max(peak, atKill), atKill, flushed
		}
		// restart starts the victim and measures until the shard is STARTED
		// and a write to it is acknowledged; it returns how long after the
		// process started the write was.
		restart := func(label string, tlBytes int64, flushed <-chan struct{}) time.Duration {
			start := time.Now()
			victim.start()
			var progress []*sluicev1.ShardRecovery
			var writable, started time.Duration
			// Until the new process marks its copies recovering, the routing
			// entry still says STARTED from before the kill: started counts
			// from the first INITIALIZING seen.
			recovering, shown := false, false
			for i := 0; writable == 0 || started == 0; i++ {
				Expect(time.Since(start)).To(BeNumerically("<", 3*time.Minute), "%s: never recovered", label)
				if st, err := c.state(coord); started == 0 && err == nil {
					for _, x := range st.Indices {
						if x.Name != "big" {
							continue
						}
						switch sh := x.Shards[0]; {
						case sh.State == sluicev1.ShardState_SHARD_STATE_INITIALIZING:
							recovering = true
							if sh.Recovery == nil {
								break
							}
							progress = append(progress, sh.Recovery)
							if sh.Recovery.Stage == sluicev1.RecoveryStage_RECOVERY_STAGE_REPLAYING_TRANSLOG && !shown {
								// What a person sees meanwhile.
								shown = true
								out, _ := c.cli(coord, "health", "big")
								GinkgoWriter.Printf("$ sluice health big\n%s\n", out)
								Expect(out).To(MatchRegexp(`big\[0\]\s+primary\s+initializing\s+%s\s+recovering on node \[%s\]: replaying translog, \d+ of \d+ ops`, nodeID, nodeID))
							}
						case sh.State == sluicev1.ShardState_SHARD_STATE_STARTED && recovering:
							started = time.Since(start)
						}
					}
				}
				if writable == 0 {
					id := fmt.Sprintf("probe-%d-%d", next, i)
					wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
					resp, err := cl.Bulk(wctx, &sluicev1.BulkRequest{Index: "big", Items: []*sluicev1.BulkItem{
						{Action: sluicev1.BulkAction_BULK_ACTION_INDEX, Id: id, Source: []byte(`{"probe":true}`)}}})
					cancel()
					if err == nil && !resp.Errors {
						writable = time.Since(start)
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			replayed, took := lastReplay(c.logOf(victim), uuid+"/0")
			last := "none"
			if len(progress) > 0 {
				last = progress[len(progress)-1].String()
			}
			msg := fmt.Sprintf("%s: %.1f MiB of translog files at the kill, %.1f MiB of it above the last commit, recovered in %v (%.1f MiB/s); shard STARTED %v and first write acknowledged %v after the process started; progress seen %d times, the last: %s",
				label, float64(tlBytes)/(1<<20), float64(replayed)/(1<<20), took.Round(time.Millisecond), float64(replayed)/(1<<20)/took.Seconds(),
				started.Round(time.Millisecond), writable.Round(time.Millisecond), len(progress), last)
			GinkgoWriter.Println(msg)
			AddReportEntry(label, msg)
			if took > 2*time.Second { // progress is published every second
				Expect(progress).NotTo(BeEmpty(), "%s: the recovery's progress was published", label)
			}
			step("recovered")
			<-flushed
			// Every acknowledged document is there.
			_, err := cl.Refresh(ctx, &sluicev1.RefreshRequest{Indices: []string{"big"}})
			Expect(err).NotTo(HaveOccurred())
			for lo := 0; lo < len(acked); lo += 4000 {
				ids := acked[lo:min(lo+4000, len(acked))]
				Expect(search("big", &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: ids}}})).
					To(Equal(int64(len(ids))), "%s: acknowledged documents lost", label)
			}
			step("checked")
			return writable
		}

		// The default flush threshold (64 MiB): under sustained indexing a
		// commit trims the translog each time it passes the threshold, so it
		// stays bounded — by the threshold plus what arrives while the
		// commit runs. Loaded with three times the threshold (untrimmed, the
		// translog would hold all of it) and killed once the translog has
		// passed 64 MiB again: about the most a restart replays by default.
		threshold := int64(64 << 20)
		peak, atKill, flushed := loadAndKill(func(sent, tl int64) bool { return sent >= 3*threshold && tl >= threshold })
		msg := fmt.Sprintf("default flush threshold: %.1f MiB of sources indexed, largest translog seen %.1f MiB", float64(sentTotal)/(1<<20), float64(peak)/(1<<20))
		GinkgoWriter.Println(msg)
		AddReportEntry("translog bound", msg)
		Expect(peak).To(BeNumerically("<", 3*threshold), "the translog stays bounded by the flush threshold")
		writable := restart("default flush threshold (64 MiB)", atKill, flushed)
		// The target is 5 s; three times that is allowed on a shared CI
		// machine (it took 7 s here while other builds ran), and the figure
		// is reported.
		Expect(writable).To(BeNumerically("<", 15*time.Second))

		// More translog than the default ever keeps: the threshold raised.
		victim.args = append(slices.Clone(base), "--scrub-interval", "24h", "--translog-flush-threshold", "4GiB")
		c.restartNodes(syscall.SIGTERM, victim)
		waitGreen("big")
		step("restarted with the threshold raised")
		mib := int64(128)
		if s := os.Getenv("SLUICE_E2E_TRANSLOG_MB"); s != "" {
			mib, _ = strconv.ParseInt(s, 10, 64)
		}
		_, atKill, flushed = loadAndKill(func(sent, _ int64) bool { return sent >= mib<<20 })
		restart(fmt.Sprintf("flush threshold raised, %d MiB of sources", mib), atKill, flushed)
	})
})

// countIDs counts the documents of index with the given ids, or all of
// them for none, after a refresh.
func countIDs(index string, ids []string) int64 {
	var q *sluicev1.Query
	if ids != nil {
		q = &sluicev1.Query{Kind: &sluicev1.Query_Ids{Ids: &sluicev1.IdsQuery{Values: ids}}}
	}
	return count(index, q)
}

func flatten(m map[int32][]string) []string {
	var out []string
	for _, ids := range m {
		out = append(out, ids...)
	}
	return out
}

// shardHealth is a shard's state and reason as ClusterHealth reports them.
func shardHealth(index string, shard int32) (sluicev1.ShardState, string) {
	h, err := cl.ClusterHealth(context.Background(), &sluicev1.ClusterHealthRequest{Indices: []string{index}})
	if err != nil || len(h.Indices) == 0 {
		return 0, ""
	}
	for _, sh := range h.Indices[0].Shards {
		if sh.Shard == shard {
			return sh.State, sh.Reason
		}
	}
	return 0, ""
}

// flipByte changes one byte of a file in place, as bit rot would: no
// truncation, so a process that maps the file sees only that byte change.
func flipByte(path string, off int64) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	Expect(err).NotTo(HaveOccurred())
	b[0] ^= 0x5a
	_, err = f.WriteAt(b, off)
	Expect(err).NotTo(HaveOccurred())
}

func appendFile(path string, data []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = f.Write(data)
	Expect(err).NotTo(HaveOccurred())
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	Expect(err).NotTo(HaveOccurred())
	return fi.Size()
}

// dirSize sums the sizes of a directory's files (0 if it is gone).
func dirSize(dir string) int64 {
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			n += fi.Size()
		}
	}
	return n
}

// largestFile is the largest file in dir whose name ends with (or, for
// "segments_", starts with) typ.
func largestFile(dir, typ string) string {
	ents, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	best, size := "", int64(-1)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, typ) && !(typ == "segments_" && strings.HasPrefix(name, typ)) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() > size {
			best, size = filepath.Join(dir, name), fi.Size()
		}
	}
	Expect(best).NotTo(BeEmpty(), "no %s file in %s", typ, dir)
	return best
}

// lastReplay is the last translog recovery a node logged for a shard
// ("<index-uuid>/<n>"): the translog bytes it read above the last commit
// and how long the whole recovery took (opening the translog, which
// checks every record, the scan, the replay and the refresh).
func lastReplay(log, shard string) (bytes int64, took time.Duration) {
	re := regexp.MustCompile(`msg="engine: recovered from translog".* bytes=(\d+) .* recovery_took=(\S+)`)
	for _, line := range strings.Split(log, "\n") {
		if m := re.FindStringSubmatch(line); m != nil && strings.Contains(line, "shard="+shard+" ") {
			var err error
			bytes, _ = strconv.ParseInt(m[1], 10, 64)
			took, err = time.ParseDuration(m[2])
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(took).To(BeNumerically(">", 0), "no translog replay logged")
	return bytes, took
}
