package engine

// Close stops the writer: operations fail with ErrClosed, in-flight ones
// finish first, buffered (unrefreshed) documents are discarded — durability
// is the translog's and Commit's job — and the writer's references to
// segments and to the current reader are dropped. Readers acquired before
// stay usable until released.
func (w *IndexWriter) Close() error {
	if w.closedFlag.Swap(true) {
		return nil
	}
	// Abort merges first: a failing merge takes refreshMu to unpin its
	// inputs.
	w.closeCancel()
	w.mergesRunning.Wait()
	w.refreshMu.Lock()
	defer w.refreshMu.Unlock()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	for w.inFlight > 0 || len(w.flushing) > 0 {
		w.cond.Wait()
	}
	for _, pt := range w.free {
		pt.dwpt.Release()
	}
	for _, pt := range w.pending {
		pt.dwpt.Release()
	}
	w.free, w.pending = nil, nil
	flushed := w.flushed
	w.flushed = nil
	close(w.refreshedCh)
	w.refreshedCh = make(chan struct{})
	w.cond.Broadcast()
	w.mu.Unlock()

	for _, s := range flushed {
		s.decRef()
	}
	for _, s := range w.segs {
		s.decRef()
	}
	for _, s := range w.pendingAdds {
		s.decRef()
	}
	w.segs, w.pendingAdds = nil, nil
	// Acquire after Close gets an empty reader rather than a released one.
	w.current.Swap(newReader(nil, w.refreshed.Load(), w.version+1)).Release()
	w.releasing.Wait()
	return nil
}
