package engine

// versionEntry is the latest operation on an id since the last refresh that
// applied deletes.
type versionEntry struct {
	seq     int64
	term    int64 // primary term of the operation
	deleted bool
	// inPlace: the operation is an in-place doc-values update, of a doc
	// already in the published reader (not buffered). A realtime read of
	// current values still refreshes for it.
	inPlace bool
}

// versionMap remembers ids written since the last refresh (Elasticsearch's
// LiveVersionMap), so that "does a live doc with this id exist?" can be
// answered for docs not yet searchable: for created/found results and for
// realtime get. It is double-buffered: a refresh moves current to old at
// its swap (ops <= the refresh's boundary) and drops old when the new
// reader is published, so every op is covered by the maps or by the current
// reader, never neither. If a refresh publishes without applying deletes,
// old is kept (and later merged) until one does: the reader may still show
// docs those entries delete. Guarded by IndexWriter.mu.
type versionMap struct {
	current, old map[string]versionEntry
	unapplied    bool  // the published reader lacks some deletes
	bytes        int64 // approximate heap of both maps
}

// Per-entry overhead of a Go map entry with a string key, roughly.
const versionEntryOverhead = 64

func newVersionMap() versionMap { return versionMap{current: make(map[string]versionEntry)} }

func (m *versionMap) get(id []byte) (versionEntry, bool) {
	if e, ok := m.current[string(id)]; ok {
		return e, true
	}
	e, ok := m.old[string(id)]
	return e, ok
}

func (m *versionMap) has(id []byte) bool {
	_, ok := m.get(id)
	return ok
}

func (m *versionMap) putEntry(id []byte, e versionEntry) {
	if _, ok := m.current[string(id)]; ok {
		m.current[string(id)] = e
		return
	}
	m.current[string(id)] = e
	m.bytes += int64(len(id)) + versionEntryOverhead
}

// rotate is called at a refresh's swap.
func (m *versionMap) rotate() {
	if m.unapplied && m.old != nil {
		for k, v := range m.current {
			m.old[k] = v
		}
	} else {
		m.old = m.current
	}
	m.current = make(map[string]versionEntry, len(m.current)/2)
}

// published is called when the refresh's reader becomes current.
func (m *versionMap) published(appliedDeletes bool) {
	m.unapplied = !appliedDeletes
	if appliedDeletes {
		m.old = nil
	}
	m.bytes = int64(len(m.current)+len(m.old)) * versionEntryOverhead
}
