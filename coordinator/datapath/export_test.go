package datapath

import "context"

// HoldBudget takes a node's whole in-flight budget, as concurrent bulks
// would, until release is called.
func HoldBudget(d *DataPath, nodeID string) (release func(), ok bool) {
	r, err := d.budget(nodeID).Reserve(context.Background(), d.opts.MaxInFlightBytesPerNode, 0)
	if err != nil {
		return nil, false
	}
	return r.Release, true
}
