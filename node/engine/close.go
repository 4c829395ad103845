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
	// Abort merges first: a failing merge takes segments.mu to unpin its
	// inputs.
	w.closeCancel()
	w.mergesRunning.Wait()
	w.segments.mu.Lock()
	defer w.segments.mu.Unlock()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	flushed := w.flushControl.close()
	w.mu.Lock()
	close(w.refreshedCh)
	w.refreshedCh = make(chan struct{})
	w.mu.Unlock()

	for _, s := range flushed {
		s.decRef()
	}
	for _, s := range w.segments.closeLocked() {
		s.decRef()
	}
	// Acquire after Close gets an empty reader rather than a released one.
	w.current.Swap(newReader(nil, w.refreshed.Load(), w.version+1)).Release()
	w.releasing.Wait()
	return nil
}
