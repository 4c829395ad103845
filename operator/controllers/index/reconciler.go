package index

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/clusterwatch"
	"github.com/sluice-search/sluice/operator/controllers/conditions"
	"github.com/sluice-search/sluice/operator/controllers/indexspec"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Finalizer holds an Index until its deletion policy has been carried out.
const Finalizer = "sluice.dev/index"

// Timing.
const (
	// Resync refreshes health and document counts of a ready index.
	Resync = 30 * time.Second
	// settling is the requeue while shards initialize.
	settling = 2 * time.Second
	// unassignedGrace is how long shards may stay unassigned after
	// creation before that is Degraded rather than Progressing.
	unassignedGrace = time.Minute
	// callTimeout bounds every call to the cluster.
	callTimeout = 10 * time.Second
)

// Reconciler reconciles Index resources.
type Reconciler struct {
	Client   client.Client
	Cluster  sluicev1.SluiceClient
	Recorder events.EventRecorder
	// Wake, if set, reconciles every Index at each event: the manager
	// sends one when the connection to the cluster is lost or back
	// (clusterwatch).
	Wake <-chan event.GenericEvent
}

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Index{}).Named("index").
		Watches(&v1alpha1.Reindex{}, handler.EnqueueRequestsFromMapFunc(r.touchedBy))
	if r.Wake != nil {
		b = b.WatchesRawSource(clusterwatch.Source(r.Wake, r.Client, &v1alpha1.IndexList{}))
	}
	return b.Complete(r)
}

// touchedBy maps a Reindex that succeeded to the Index resources of its
// namespace whose index it read, wrote or moved an alias away from, so
// their document counts and aliases show the swap at once rather than at
// the next resync.
func (r *Reconciler) touchedBy(ctx context.Context, o client.Object) []reconcile.Request {
	rx, ok := o.(*v1alpha1.Reindex)
	if !ok || rx.Status.Phase != v1alpha1.ReindexSucceeded {
		return nil
	}
	var l v1alpha1.IndexList
	if err := r.Client.List(ctx, &l, client.InNamespace(rx.Namespace)); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range l.Items {
		ix := &l.Items[i]
		name := ix.ClusterIndexName()
		if name == string(rx.Spec.Source.Index) || name == string(rx.Spec.Destination.Index) ||
			rx.Spec.SwapAlias != nil && slices.Contains(ix.Status.Aliases, string(*rx.Spec.SwapAlias)) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ix)})
		}
	}
	return reqs
}

// Reconcile converges one Index.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ix v1alpha1.Index
	if err := r.Client.Get(ctx, req.NamespacedName, &ix); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ix.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &ix)
	}
	if !controllerutil.ContainsFinalizer(&ix, Finalizer) {
		controllerutil.AddFinalizer(&ix, Finalizer)
		if err := r.Client.Update(ctx, &ix); err != nil {
			return conditions.RequeueOnConflict(err)
		}
	}
	before := ix.Status.DeepCopy()
	res := r.converge(ctx, &ix)
	ix.Status.ObservedGeneration = ix.Generation
	conditions.Set(&ix.Status.Conditions, ix.Generation, res.status)
	if !apiequality.Semantic.DeepEqual(before, &ix.Status) {
		if err := r.Client.Status().Update(ctx, &ix); err != nil {
			return conditions.RequeueOnConflict(err)
		}
	}
	return ctrl.Result{RequeueAfter: res.requeue}, nil
}

// outcome is what converge decided: the conditions and when to look again
// (0: only on a change to the resource).
type outcome struct {
	status  conditions.Status
	requeue time.Duration
}

// converge brings the cluster's index to the spec and fills ix.Status.
func (r *Reconciler) converge(ctx context.Context, ix *v1alpha1.Index) outcome {
	name := ix.ClusterIndexName()
	ix.Status.IndexName = name
	if ix.Status.AppliedAliases == nil {
		// Written before status.appliedAliases existed: status.aliases
		// held the applied list then.
		ix.Status.AppliedAliases = append([]string{}, ix.Status.Aliases...)
	}
	settings, err := indexspec.Settings(&ix.Spec.IndexParameters)
	if err != nil {
		return r.invalid(ix, err.Error())
	}
	mapping, err := indexspec.Mapping(&ix.Spec.IndexParameters)
	if err != nil {
		return r.invalid(ix, err.Error())
	}
	aliases := aliasNames(ix.Spec.Aliases)

	info, err := r.getIndex(ctx, name)
	switch {
	case status.Code(err) == codes.NotFound:
		if ix.Status.UUID != "" {
			r.event(ix, corev1.EventTypeWarning, "IndexMissing", "Create",
				"index %s (uuid %s) is gone from the cluster; creating it again", name, ix.Status.UUID)
		}
		info, err = r.create(ctx, ix, name, settings, mapping, aliases)
		if err != nil {
			return r.clusterError(ix, "Create", "creating the index", err)
		}
	case err != nil:
		return r.clusterError(ix, "Get", "reading the index", err)
	case info.GetName() != name:
		return r.invalid(ix, fmt.Sprintf("%s is an alias of index %s, not an index", name, info.GetName()))
	}

	if msg := staticMismatch(settings, info.GetSettings()); msg != "" {
		r.observe(ix, info)
		return r.invalid(ix, msg)
	}
	if info, err = r.update(ctx, ix, info, settings, mapping); err != nil {
		r.observe(ix, info)
		if errors.Is(err, errMappingConflict) {
			return r.invalid(ix, err.Error())
		}
		return r.clusterError(ix, "Update", "updating the index", err)
	}
	if info, err = r.syncAliases(ctx, ix, info, aliases); err != nil {
		r.observe(ix, info)
		return r.clusterError(ix, "UpdateAliases", "updating aliases", err)
	}
	r.observe(ix, info)
	return health(info)
}

// getIndex reads an index with its statistics; a cluster without the data
// path answers UNIMPLEMENTED for statistics, and the metadata alone is
// read instead.
func (r *Reconciler) getIndex(ctx context.Context, name string) (*sluicev1.IndexInfo, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := r.Cluster.GetIndex(cctx, &sluicev1.GetIndexRequest{Name: name, IncludeStats: true})
	if status.Code(err) == codes.Unimplemented {
		resp, err = r.Cluster.GetIndex(cctx, &sluicev1.GetIndexRequest{Name: name})
	}
	return resp.GetIndex(), err
}

func (r *Reconciler) create(ctx context.Context, ix *v1alpha1.Index, name string, settings *sluicev1.IndexSettings,
	mapping *sluicev1.Mapping, aliases []string) (*sluicev1.IndexInfo, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := r.Cluster.CreateIndex(cctx, &sluicev1.CreateIndexRequest{Name: name, Settings: settings, Mapping: mapping, Aliases: aliases})
	if status.Code(err) == codes.AlreadyExists {
		// Created since we looked (by us, in a reconcile whose answer was
		// lost, or by someone else): adopt it.
		info, gerr := r.getIndex(ctx, name)
		if gerr != nil {
			return nil, gerr
		}
		r.event(ix, corev1.EventTypeNormal, "Adopted", "Create", "index %s already existed (uuid %s); managing it", name, info.GetUuid())
		return info, nil
	}
	if err != nil {
		return nil, err
	}
	ix.Status.AppliedAliases = aliases
	r.event(ix, corev1.EventTypeNormal, conditions.ReasonIndexCreated, "Create", "created index %s (uuid %s, %d shards)",
		name, resp.GetIndex().GetUuid(), resp.GetIndex().GetSettings().GetNumberOfShards())
	return resp.GetIndex(), nil
}

// staticMismatch describes shard counts that differ between the spec and
// an existing index; they can only change by reindexing.
func staticMismatch(desired, current *sluicev1.IndexSettings) string {
	var diffs []string
	if d, c := desired.GetNumberOfShards(), current.GetNumberOfShards(); d != c {
		diffs = append(diffs, fmt.Sprintf("shards: the index has %d, the spec says %d", c, d))
	}
	if d, c := desired.GetNumberOfRoutingShards(), current.GetNumberOfRoutingShards(); d != 0 && d != c {
		diffs = append(diffs, fmt.Sprintf("routingShards: the index has %d, the spec says %d", c, d))
	}
	if len(diffs) == 0 {
		return ""
	}
	return strings.Join(diffs, "; ") + " (shard counts are fixed at creation: reindex into a new index to change them)"
}

var errMappingConflict = errors.New("mapping fields cannot change type")

// update applies changed dynamic settings and new mapping fields.
func (r *Reconciler) update(ctx context.Context, ix *v1alpha1.Index, info *sluicev1.IndexInfo,
	settings *sluicev1.IndexSettings, mapping *sluicev1.Mapping) (*sluicev1.IndexInfo, error) {
	name := info.GetName()
	if up, mask := indexspec.SettingsUpdate(settings, info.GetSettings()); up != nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := r.Cluster.UpdateIndexSettings(cctx, &sluicev1.UpdateIndexSettingsRequest{Name: name, Settings: up,
			UpdateMask: &fieldmaskpb.FieldMask{Paths: mask}})
		cancel()
		if err != nil {
			return info, err
		}
		info = withStats(resp.GetIndex(), info)
		r.event(ix, corev1.EventTypeNormal, "SettingsUpdated", "Update", "updated settings of index %s", name)
	}
	up, conflicts := indexspec.MappingUpdate(mapping, info.GetMapping())
	if len(conflicts) > 0 {
		return info, fmt.Errorf("%w: %s; reindex into a new index to change them", errMappingConflict, strings.Join(conflicts, ", "))
	}
	if up != nil {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := r.Cluster.PutMapping(cctx, &sluicev1.PutMappingRequest{Name: name, Mapping: up})
		cancel()
		if err != nil {
			return info, err
		}
		info = withStats(resp.GetIndex(), info)
		r.event(ix, corev1.EventTypeNormal, "MappingUpdated", "Update", "added fields %s to index %s",
			strings.Join(slices.Sorted(maps.Keys(up.GetProperties())), ", "), name)
	}
	return info, nil
}

// syncAliases adds the names added to spec.aliases since the last applied
// list (status.appliedAliases) and removes the names taken out of it, in
// one atomic call. Names already in the wanted state are skipped, so a call
// whose status write was lost is not repeated wrongly.
func (r *Reconciler) syncAliases(ctx context.Context, ix *v1alpha1.Index, info *sluicev1.IndexInfo, want []string) (*sluicev1.IndexInfo, error) {
	name := info.GetName()
	applied := ix.Status.AppliedAliases
	var actions []*sluicev1.AliasAction
	for _, a := range want {
		if !slices.Contains(applied, a) && !slices.Contains(info.GetAliases(), a) {
			actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_ADD, Alias: a, Index: name})
		}
	}
	for _, a := range applied {
		if !slices.Contains(want, a) && slices.Contains(info.GetAliases(), a) {
			actions = append(actions, &sluicev1.AliasAction{Type: sluicev1.AliasActionType_ALIAS_ACTION_TYPE_REMOVE, Alias: a, Index: name})
		}
	}
	if len(actions) > 0 {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := r.Cluster.UpdateAliases(cctx, &sluicev1.UpdateAliasesRequest{Actions: actions})
		cancel()
		if err != nil {
			return info, err
		}
		fresh, err := r.getIndex(ctx, name)
		if err != nil {
			return info, err
		}
		info = fresh
		r.event(ix, corev1.EventTypeNormal, "AliasesUpdated", "UpdateAliases", "aliases of index %s: %s", name, strings.Join(info.GetAliases(), ", "))
	}
	ix.Status.AppliedAliases = want
	return info, nil
}

// observe copies what the cluster reports into status.
func (r *Reconciler) observe(ix *v1alpha1.Index, info *sluicev1.IndexInfo) {
	if info == nil {
		return
	}
	st := &ix.Status
	st.UUID = info.GetUuid()
	st.Shards = info.GetSettings().GetNumberOfShards()
	st.RoutingShards = info.GetSettings().GetNumberOfRoutingShards()
	st.Health = healthName(info.GetHealth())
	st.DocsCount = info.GetDocsCount()
	st.Aliases = nil
	if len(info.GetAliases()) > 0 {
		st.Aliases = slices.Sorted(slices.Values(info.GetAliases()))
	}
	st.ActiveShards = 0
	for _, s := range info.GetShards() {
		if s.GetState() == sluicev1.ShardState_SHARD_STATE_STARTED {
			st.ActiveShards++
		}
	}
}

// health turns the index's shard states into conditions.
func health(info *sluicev1.IndexInfo) outcome {
	var initializing, broken []string
	young := time.Since(info.GetCreationTime().AsTime()) < unassignedGrace
	for _, s := range info.GetShards() {
		if !s.GetPrimary() {
			continue
		}
		desc := fmt.Sprintf("shard %d %s", s.GetShard(), strings.ToLower(strings.TrimPrefix(s.GetState().String(), "SHARD_STATE_")))
		if s.GetReason() != "" {
			desc += ": " + s.GetReason()
		}
		switch s.GetState() {
		case sluicev1.ShardState_SHARD_STATE_STARTED:
		case sluicev1.ShardState_SHARD_STATE_INITIALIZING:
			initializing = append(initializing, desc)
		case sluicev1.ShardState_SHARD_STATE_UNASSIGNED:
			if young {
				initializing = append(initializing, desc)
			} else {
				broken = append(broken, desc)
			}
		default: // FAILED, NODE_LEFT
			broken = append(broken, desc)
		}
	}
	switch {
	case len(broken) > 0:
		msg := strings.Join(broken, "; ")
		return outcome{requeue: settling, status: conditions.Status{
			Ready:       conditions.Cond{Reason: conditions.ReasonShardsUnassigned, Message: msg},
			Progressing: conditions.Cond{True: len(initializing) > 0, Reason: progressingReason(initializing), Message: strings.Join(initializing, "; ")},
			Degraded:    conditions.Cond{True: true, Reason: conditions.ReasonShardsUnassigned, Message: msg},
		}}
	case len(initializing) > 0:
		msg := strings.Join(initializing, "; ")
		return outcome{requeue: settling, status: conditions.Status{
			Ready:       conditions.Cond{Reason: conditions.ReasonShardsInitializing, Message: msg},
			Progressing: conditions.Cond{True: true, Reason: conditions.ReasonShardsInitializing, Message: msg},
		}}
	default:
		msg := fmt.Sprintf("index %s (uuid %s) is %s", info.GetName(), info.GetUuid(), healthName(info.GetHealth()))
		return outcome{requeue: Resync, status: conditions.Status{
			Ready: conditions.Cond{True: true, Reason: conditions.ReasonIndexReady, Message: msg},
		}}
	}
}

func progressingReason(initializing []string) string {
	if len(initializing) > 0 {
		return conditions.ReasonShardsInitializing
	}
	return ""
}

// invalid reports a spec the operator or the cluster refuses. It is not
// retried: a change to the resource triggers the next attempt.
func (r *Reconciler) invalid(ix *v1alpha1.Index, msg string) outcome {
	if conditions.Reason(ix.Status.Conditions, v1alpha1.ConditionDegraded) != conditions.ReasonInvalidSpec || ix.Status.ObservedGeneration != ix.Generation {
		r.event(ix, corev1.EventTypeWarning, conditions.ReasonInvalidSpec, "Validate", "%s", msg)
	}
	return outcome{status: conditions.Status{
		Ready:    conditions.Cond{Reason: conditions.ReasonInvalidSpec, Message: msg},
		Degraded: conditions.Cond{True: true, Reason: conditions.ReasonInvalidSpec, Message: msg},
	}}
}

// clusterError reports a failed call. Refusals of the spec are invalid;
// everything else is retried, with a delay that grows with the length of
// the outage so a long one does not hammer the cluster.
func (r *Reconciler) clusterError(ix *v1alpha1.Index, action, doing string, err error) outcome {
	reason, retry := conditions.ClusterReason(err)
	msg := fmt.Sprintf("%s %s: %s", doing, ix.ClusterIndexName(), status.Convert(err).Message())
	if !retry {
		return r.invalid(ix, msg)
	}
	if reason == conditions.ReasonClusterUnreachable {
		// The health last seen says nothing about the index now.
		ix.Status.Health = v1alpha1.IndexHealthUnknown
	}
	r.event(ix, corev1.EventTypeWarning, reason, action, "%s", msg)
	return outcome{requeue: conditions.Backoff(ix.Status.Conditions), status: conditions.Status{
		Ready:       conditions.Cond{Reason: reason, Message: msg},
		Progressing: conditions.Cond{True: ix.Status.UUID == "", Reason: creatingReason(ix), Message: "waiting for the cluster"},
		Degraded:    conditions.Cond{True: true, Reason: reason, Message: msg},
	}}
}

func creatingReason(ix *v1alpha1.Index) string {
	if ix.Status.UUID == "" {
		return conditions.ReasonCreating
	}
	return ""
}

// finalize carries out the deletion policy, then releases the resource.
func (r *Reconciler) finalize(ctx context.Context, ix *v1alpha1.Index) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ix, Finalizer) {
		return ctrl.Result{}, nil
	}
	name := ix.ClusterIndexName()
	if ix.Spec.DeletionPolicy != v1alpha1.DeletionPolicyRetain && ix.Status.UUID != "" {
		info, err := r.getIndex(ctx, name)
		switch {
		case status.Code(err) == codes.NotFound:
		case err != nil:
			return r.finalizeFailed(ctx, ix, err)
		case info.GetName() != name || info.GetUuid() != ix.Status.UUID:
			// Someone replaced the index: it is not ours to delete.
			r.event(ix, corev1.EventTypeWarning, "NotDeleted", "Delete",
				"index %s now has uuid %s, not %s as recorded; leaving it", name, info.GetUuid(), ix.Status.UUID)
		default:
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_, err := r.Cluster.DeleteIndex(cctx, &sluicev1.DeleteIndexRequest{Name: name})
			cancel()
			if err != nil && status.Code(err) != codes.NotFound {
				return r.finalizeFailed(ctx, ix, err)
			}
			r.event(ix, corev1.EventTypeNormal, "Deleted", "Delete", "deleted index %s (uuid %s)", name, ix.Status.UUID)
		}
	} else if ix.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain {
		r.event(ix, corev1.EventTypeNormal, "Retained", "Delete", "left index %s in the cluster (deletionPolicy Retain)", name)
	}
	controllerutil.RemoveFinalizer(ix, Finalizer)
	if err := r.Client.Update(ctx, ix); err != nil {
		return conditions.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return ctrl.Result{}, nil
}

// finalizeFailed records why deletion waits and retries.
func (r *Reconciler) finalizeFailed(ctx context.Context, ix *v1alpha1.Index, err error) (ctrl.Result, error) {
	reason, _ := conditions.ClusterReason(err)
	msg := fmt.Sprintf("deleting index %s: %s", ix.ClusterIndexName(), status.Convert(err).Message())
	r.event(ix, corev1.EventTypeWarning, reason, "Delete", "%s", msg)
	after := conditions.Backoff(ix.Status.Conditions)
	conditions.Set(&ix.Status.Conditions, ix.Generation, conditions.Status{
		Ready:       conditions.Cond{Reason: conditions.ReasonDeleting, Message: msg},
		Progressing: conditions.Cond{True: true, Reason: conditions.ReasonDeleting, Message: "waiting to delete the index"},
		Degraded:    conditions.Cond{True: true, Reason: reason, Message: msg},
	})
	if err := r.Client.Status().Update(ctx, ix); err != nil {
		return conditions.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

func (r *Reconciler) event(ix *v1alpha1.Index, typ, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(ix, nil, typ, reason, action, note, args...)
	}
}

func aliasNames(in []v1alpha1.IndexName) []string {
	out := make([]string, 0, len(in))
	for _, a := range in {
		out = append(out, string(a))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func healthName(h sluicev1.HealthStatus) v1alpha1.IndexHealth {
	switch h {
	case sluicev1.HealthStatus_HEALTH_STATUS_GREEN:
		return v1alpha1.IndexHealthGreen
	case sluicev1.HealthStatus_HEALTH_STATUS_YELLOW:
		return v1alpha1.IndexHealthYellow
	case sluicev1.HealthStatus_HEALTH_STATUS_RED:
		return v1alpha1.IndexHealthRed
	}
	return ""
}

// withStats keeps the statistics of old on an index answer that has none
// (update calls return metadata only).
func withStats(info, old *sluicev1.IndexInfo) *sluicev1.IndexInfo {
	if info == nil {
		return old
	}
	if info.GetDocsCount() == 0 {
		info.DocsCount, info.StoreSizeBytes = old.GetDocsCount(), old.GetStoreSizeBytes()
	}
	return info
}
