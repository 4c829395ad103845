// Package clusterwatch wakes the reconcilers when the operator's
// connection to the Sluice cluster is lost or comes back, so every
// resource's status follows an outage within seconds: health turns unknown
// when the coordinators go away, and Ready again as soon as they return,
// instead of at the next periodic resync or retry backoff.
//
// A Watcher follows the state of the gRPC connection the reconcilers
// share. An idle connection (gRPC drops to IDLE when the server goes away
// and waits for the next call to dial again) is asked to connect at once,
// so the return of the cluster is noticed without a call; the dial
// backoff (client.DialOptions) bounds how long that takes. Each crossing
// between connected and not sends one event to every subscriber; Source
// turns a subscription into a controller source that enqueues every
// resource of a kind.
package clusterwatch

import (
	"context"
	"log/slog"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watcher follows one connection. Start runs it (a manager.Runnable).
type Watcher struct {
	conn *grpc.ClientConn
	log  *slog.Logger

	mu   sync.Mutex
	subs []chan event.GenericEvent
}

// New returns a watcher of conn.
func New(conn *grpc.ClientConn, log *slog.Logger) *Watcher {
	return &Watcher{conn: conn, log: log}
}

// Subscribe returns a channel that receives an event at each change
// between connected and not. Events that find the previous one unread
// are dropped: one pending wake-up is enough.
func (w *Watcher) Subscribe() <-chan event.GenericEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := make(chan event.GenericEvent, 1)
	w.subs = append(w.subs, ch)
	return ch
}

// Start follows the connection until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.conn.Connect()
	last := w.conn.GetState()
	for w.conn.WaitForStateChange(ctx, last) {
		s := w.conn.GetState()
		if s == connectivity.Idle {
			w.conn.Connect()
		}
		if (s == connectivity.Ready) != (last == connectivity.Ready) {
			w.log.Info("connection to the cluster changed", "state", s.String())
			w.notify()
		}
		last = s
	}
	return nil
}

func (w *Watcher) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.subs {
		select {
		case ch <- event.GenericEvent{}:
		default:
		}
	}
}

// Source enqueues every object of list's kind (read with c) when ch
// receives an event.
func Source(ch <-chan event.GenericEvent, c client.Reader, list client.ObjectList) source.Source {
	return source.Channel(ch, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(ctx, l); err != nil {
			return nil // the periodic resyncs still come
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(items))
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
			}
		}
		return reqs
	}))
}
