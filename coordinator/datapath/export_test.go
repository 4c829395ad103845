package datapath

// HoldBudget takes a node's whole in-flight budget, as concurrent bulks
// would, until release is called.
func HoldBudget(d *DataPath, nodeID string) (release func(), ok bool) {
	b := d.budget(nodeID)
	if !b.TryAcquire(d.opts.MaxInFlightBytesPerNode) {
		return nil, false
	}
	return func() { b.Release(d.opts.MaxInFlightBytesPerNode) }, true
}
