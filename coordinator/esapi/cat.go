package esapi

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// catParams are the _cat APIs' URL parameters.
var catParams = []string{"format", "v", "h", "s", "help", "local", "master_timeout"}

// catTable is a _cat answer: columns and rows of strings.
type catTable struct {
	cols []string
	rows [][]string
}

// write answers a _cat request: text (aligned columns, a header with
// ?v), or ?format=json (an array of objects of strings); h selects and
// orders columns, s sorts rows ("col", "col:desc", comma separated).
func (a *API) writeCat(r *request, t *catTable) (int, any, error) {
	if help, err := r.boolParam("help", false); err != nil {
		return 0, nil, err
	} else if help {
		return http.StatusOK, nil, a.writeText(r, strings.Join(t.cols, "\n")+"\n")
	}
	idx := map[string]int{}
	for i, c := range t.cols {
		idx[c] = i
	}
	cols := t.cols
	if h := r.param("h"); h != "" {
		cols = splitNames(h)
		for _, c := range cols {
			if _, ok := idx[c]; !ok {
				return 0, nil, badRequest("[h]: unknown column [%s] (this table has %s)", c, strings.Join(t.cols, ", "))
			}
		}
	}
	if s := r.param("s"); s != "" {
		keys := splitNames(s)
		for _, k := range keys {
			c, _, _ := strings.Cut(k, ":")
			if _, ok := idx[c]; !ok {
				return 0, nil, badRequest("[s]: unable to sort by unknown column [%s]", c)
			}
		}
		slices.SortStableFunc(t.rows, func(x, y []string) int {
			for _, k := range keys {
				c, order, _ := strings.Cut(k, ":")
				i := idx[c]
				cmp := compareCells(x[i], y[i])
				if order == "desc" {
					cmp = -cmp
				}
				if cmp != 0 {
					return cmp
				}
			}
			return 0
		})
	}
	switch f := r.param("format"); f {
	case "json":
		out := []map[string]string{}
		for _, row := range t.rows {
			m := map[string]string{}
			for _, c := range cols {
				m[c] = row[idx[c]]
			}
			out = append(out, m)
		}
		return http.StatusOK, out, nil
	case "", "txt", "text":
	default:
		return 0, nil, badRequest("format [%s] is not supported by Sluice's _cat (text or json)", f)
	}
	v, err := r.boolParam("v", false)
	if err != nil {
		return 0, nil, err
	}
	var lines [][]string
	if v {
		lines = append(lines, cols)
	}
	for _, row := range t.rows {
		line := make([]string, len(cols))
		for j, c := range cols {
			line[j] = row[idx[c]]
		}
		lines = append(lines, line)
	}
	width := make([]int, len(cols))
	for _, l := range lines {
		for j, cell := range l {
			width[j] = max(width[j], len(cell))
		}
	}
	var buf bytes.Buffer
	for _, l := range lines {
		for j, cell := range l {
			if j > 0 {
				buf.WriteByte(' ')
			}
			if j == len(l)-1 {
				buf.WriteString(cell)
			} else {
				fmt.Fprintf(&buf, "%-*s", width[j], cell)
			}
		}
		buf.WriteByte('\n')
	}
	return http.StatusOK, nil, a.writeText(r, buf.String())
}

func (a *API) writeText(r *request, s string) error {
	a.write(r, http.StatusOK, "text/plain; charset=UTF-8", []byte(s))
	return nil
}

// compareCells orders numbers as numbers, the rest as text.
func compareCells(x, y string) int {
	fx, ex := strconv.ParseFloat(x, 64)
	fy, ey := strconv.ParseFloat(y, 64)
	if ex == nil && ey == nil {
		switch {
		case fx < fy:
			return -1
		case fx > fy:
			return 1
		}
		return 0
	}
	return strings.Compare(x, y)
}

// byteUnits are the bytes parameter's units.
var byteUnits = map[string]int64{"b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40, "pb": 1 << 50}

// formatBytes writes a size as _cat does: in the bytes parameter's unit
// (a whole number), else in the largest unit that keeps it >= 1 ("4.5kb").
func formatBytes(n int64, unit string) string {
	if u, ok := byteUnits[unit]; ok {
		return strconv.FormatInt(n/u, 10)
	}
	for _, u := range []string{"pb", "tb", "gb", "mb", "kb"} {
		if f := float64(n) / float64(byteUnits[u]); f >= 1 {
			return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + u
		}
	}
	return strconv.FormatInt(n, 10) + "b"
}

func (a *API) catIndices(r *request) (int, any, error) {
	unit := r.param("bytes")
	if _, ok := byteUnits[unit]; unit != "" && !ok {
		return 0, nil, badRequest("[bytes] must be one of b, kb, mb, gb, tb, pb; got [%s]", unit)
	}
	infos, err := a.indices(r.Context(), r.PathValue("index"))
	if err != nil {
		return 0, nil, err
	}
	// Statistics come from the data nodes.
	stats, err := a.c.ListIndices(r.Context(), &sluicev1.ListIndicesRequest{IncludeStats: true})
	if err != nil {
		return 0, nil, err
	}
	byName := map[string]*sluicev1.IndexInfo{}
	for _, x := range stats.GetIndices() {
		byName[x.GetName()] = x
	}
	t := &catTable{cols: []string{"health", "status", "index", "uuid", "pri", "rep", "docs.count", "store.size", "pri.store.size"}}
	want := r.param("health")
	for _, x := range infos {
		s := byName[x.GetName()]
		if s == nil {
			continue // deleted meanwhile
		}
		h := healthWord(s.GetHealth())
		if want != "" && h != want {
			continue
		}
		size := formatBytes(s.GetStoreSizeBytes(), unit)
		t.rows = append(t.rows, []string{h, "open", x.GetName(), x.GetUuid(),
			strconv.Itoa(int(x.GetSettings().GetNumberOfShards())), strconv.Itoa(int(x.GetSettings().GetNumberOfReplicas())),
			strconv.FormatInt(s.GetDocsCount(), 10), size, size})
	}
	slices.SortFunc(t.rows, func(x, y []string) int { return strings.Compare(x[2], y[2]) })
	return a.writeCat(r, t)
}

func (a *API) catHealth(r *request) (int, any, error) {
	h, err := a.c.ClusterHealth(r.Context(), &sluicev1.ClusterHealthRequest{})
	if err != nil {
		return 0, nil, err
	}
	c := healthCounts(h)
	now := time.Now()
	t := &catTable{cols: []string{"epoch", "timestamp", "cluster", "status", "node.total", "node.data", "shards", "pri", "relo", "init",
		"unassign", "pending_tasks", "max_task_wait_time", "active_shards_percent"}}
	nodes := strconv.Itoa(int(h.GetNumberOfDataNodes()))
	t.rows = append(t.rows, []string{strconv.FormatInt(now.Unix(), 10), now.UTC().Format("15:04:05"), h.GetClusterName(),
		healthWord(h.GetStatus()), nodes, nodes, strconv.Itoa(c.active), strconv.Itoa(c.activePrimaries), strconv.Itoa(c.relocating), strconv.Itoa(c.initializing),
		strconv.Itoa(c.unassigned), "0", "-", strconv.FormatFloat(c.percent(), 'f', 1, 64) + "%"})
	return a.writeCat(r, t)
}
