package reindex

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
	"github.com/sluice-search/sluice/operator/controllers/clusterwatch"
	"github.com/sluice-search/sluice/operator/controllers/conditions"
	sluicev1 "github.com/sluice-search/sluice/proto/sluice/v1"
)

// Finalizer holds a Reindex whose task has not ended, to cancel it.
const Finalizer = "sluice.dev/reindex"

const (
	// Poll is how often a running task is followed.
	Poll = 2 * time.Second
	// unsupportedRetry is the slow retry against a cluster without reindex.
	unsupportedRetry = 2 * time.Minute
	// adoptSlack is how long before the resource's creation an adopted
	// task may have started (clock skew between API server and cluster).
	adoptSlack  = 30 * time.Second
	callTimeout = 10 * time.Second
)

// Reconciler reconciles Reindex resources.
type Reconciler struct {
	Client   client.Client
	Cluster  sluicev1.SluiceClient
	Recorder events.EventRecorder
	// Wake, if set, reconciles every Reindex at each event: the manager
	// sends one when the connection to the cluster is lost or back
	// (clusterwatch).
	Wake <-chan event.GenericEvent
}

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Reindex{}).Named("reindex")
	if r.Wake != nil {
		b = b.WatchesRawSource(clusterwatch.Source(r.Wake, r.Client, &v1alpha1.ReindexList{}))
	}
	return b.Complete(r)
}

// Reconcile starts, follows, rethrottles or cancels one Reindex's task.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rx v1alpha1.Reindex
	if err := r.Client.Get(ctx, req.NamespacedName, &rx); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rx.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &rx)
	}
	if terminal(rx.Status.Phase) {
		// Nothing left to follow; let deletion through without the cluster.
		return r.release(ctx, &rx)
	}
	if !controllerutil.ContainsFinalizer(&rx, Finalizer) {
		controllerutil.AddFinalizer(&rx, Finalizer)
		if err := r.Client.Update(ctx, &rx); err != nil {
			return conditions.RequeueOnConflict(err)
		}
	}
	before := rx.Status.DeepCopy()
	res := r.step(ctx, &rx)
	rx.Status.ObservedGeneration = rx.Generation
	conditions.Set(&rx.Status.Conditions, rx.Generation, res.status)
	if !apiequality.Semantic.DeepEqual(before, &rx.Status) {
		if err := r.Client.Status().Update(ctx, &rx); err != nil {
			return conditions.RequeueOnConflict(err)
		}
	}
	if terminal(rx.Status.Phase) {
		return r.release(ctx, &rx)
	}
	return ctrl.Result{RequeueAfter: res.requeue}, nil
}

type outcome struct {
	status  conditions.Status
	requeue time.Duration
}

// step starts the task if there is none yet, then follows it.
func (r *Reconciler) step(ctx context.Context, rx *v1alpha1.Reindex) outcome {
	if rx.Status.TaskID == "" {
		task, res, ok := r.start(ctx, rx)
		if !ok {
			return res
		}
		return r.mirror(ctx, rx, task)
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	resp, err := r.Cluster.GetTask(cctx, &sluicev1.GetTaskRequest{Id: rx.Status.TaskID})
	cancel()
	switch {
	case status.Code(err) == codes.NotFound:
		msg := fmt.Sprintf("task %s no longer exists in the cluster", rx.Status.TaskID)
		r.event(rx, corev1.EventTypeWarning, conditions.ReasonTaskLost, "Follow", "%s", msg)
		rx.Status.Phase = v1alpha1.ReindexFailed
		now := metav1.Now()
		rx.Status.CompletionTime = &now
		return outcome{status: conditions.Status{
			Ready:    conditions.Cond{Reason: conditions.ReasonTaskLost, Message: msg},
			Degraded: conditions.Cond{True: true, Reason: conditions.ReasonTaskLost, Message: msg},
		}}
	case err != nil:
		return r.clusterError(rx, "Follow", "following task "+rx.Status.TaskID, err)
	}
	task := resp.GetTask()
	if task, err = r.rethrottle(ctx, rx, task); err != nil {
		return r.clusterError(rx, "Rethrottle", "rethrottling task "+rx.Status.TaskID, err)
	}
	return r.mirror(ctx, rx, task)
}

// start finds the task this resource started before, or starts one, and
// records its id at once. ok is false when there is no task to follow
// (res says why).
func (r *Reconciler) start(ctx context.Context, rx *v1alpha1.Reindex) (task *sluicev1.Task, res outcome, ok bool) {
	req, err := Request(rx)
	if err != nil {
		return nil, r.failInvalid(rx, err.Error()), false
	}
	task, err = r.find(ctx, rx)
	if err != nil {
		return nil, r.clusterError(rx, "Find", "looking for an existing task", err), false
	}
	if task != nil {
		r.event(rx, corev1.EventTypeNormal, "TaskAdopted", "Start", "following task %s, started earlier for this resource", task.GetId())
	} else {
		if rx.Spec.Destination.Create == nil {
			// Without create the destination must exist: it may be an
			// Index resource applied together with this one, so wait.
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			_, err := r.Cluster.GetIndex(cctx, &sluicev1.GetIndexRequest{Name: string(rx.Spec.Destination.Index)})
			cancel()
			if status.Code(err) == codes.NotFound {
				return nil, r.waiting(rx, fmt.Sprintf("destination index %s does not exist yet (set destination.create to have the reindex create it)", rx.Spec.Destination.Index)), false
			} else if err != nil {
				return nil, r.clusterError(rx, "Start", "reading the destination index", err), false
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := r.Cluster.Reindex(cctx, req)
		cancel()
		switch {
		case status.Code(err) == codes.NotFound:
			return nil, r.waiting(rx, status.Convert(err).Message()), false
		case err != nil:
			return nil, r.clusterError(rx, "Start", "starting the reindex", err), false
		}
		task = resp.GetTask()
		r.event(rx, corev1.EventTypeNormal, "TaskStarted", "Start", "started task %s: %s -> %s", task.GetId(), rx.Spec.Source.Index, rx.Spec.Destination.Index)
	}
	if err := r.recordTask(ctx, rx, task.GetId()); err != nil {
		// The task runs; a later reconcile finds it again through find.
		return nil, r.clusterError(rx, "Start", "recording task "+task.GetId(), err), false
	}
	return task, outcome{}, true
}

// recordTask writes the task id to status right away, on a fresh copy of
// the resource when the cached one is stale, so that a crash from here on
// cannot lose it.
func (r *Reconciler) recordTask(ctx context.Context, rx *v1alpha1.Reindex, id string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var fresh v1alpha1.Reindex
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rx), &fresh); err != nil {
			return err
		}
		if fresh.Status.TaskID == id {
			rx.ResourceVersion = fresh.ResourceVersion
			return nil
		}
		fresh.Status.TaskID = id
		if fresh.Status.Phase == "" {
			fresh.Status.Phase = v1alpha1.ReindexPending
		}
		if err := r.Client.Status().Update(ctx, &fresh); err != nil {
			return err
		}
		rx.ResourceVersion = fresh.ResourceVersion
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording task %s: %w", id, err)
	}
	rx.Status.TaskID = id
	return nil
}

// find looks for a task this resource started whose id was never recorded
// (see the package doc for the rules).
func (r *Reconciler) find(ctx context.Context, rx *v1alpha1.Reindex) (*sluicev1.Task, error) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := r.Cluster.ListTasks(cctx, &sluicev1.ListTasksRequest{})
	if err != nil {
		return nil, err
	}
	src, dst := string(rx.Spec.Source.Index), string(rx.Spec.Destination.Index)
	resolved := ""
	notBefore := rx.CreationTimestamp.Add(-adoptSlack)
	var candidates []*sluicev1.Task
	for _, t := range resp.GetTasks() {
		st := t.GetReindex()
		if t.GetType() != "" && t.GetType() != "reindex" || st.GetDestIndex() != dst {
			continue
		}
		if t.GetStartTime() != nil && t.GetStartTime().AsTime().Before(notBefore) {
			continue
		}
		// A task that ended before this resource existed belongs to an
		// earlier resource of the same name (deleted, then applied again).
		if t.GetEndTime() != nil && t.GetEndTime().AsTime().Before(rx.CreationTimestamp.Time) {
			continue
		}
		if st.GetSourceIndex() != src {
			if resolved == "" {
				// The spec may name an alias; the task records the index.
				info, err := r.Cluster.GetIndex(cctx, &sluicev1.GetIndexRequest{Name: src})
				if err != nil && status.Code(err) != codes.NotFound {
					return nil, err
				}
				resolved = info.GetIndex().GetName()
			}
			if st.GetSourceIndex() != resolved {
				continue
			}
		}
		candidates = append(candidates, t)
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	var others v1alpha1.ReindexList
	if err := r.Client.List(ctx, &others); err != nil {
		return nil, fmt.Errorf("listing reindexes: %w", err)
	}
	claimed := map[string]bool{}
	for _, o := range others.Items {
		if o.UID != rx.UID && o.Status.TaskID != "" {
			claimed[o.Status.TaskID] = true
		}
	}
	candidates = slices.DeleteFunc(candidates, func(t *sluicev1.Task) bool { return claimed[t.GetId()] })
	if len(candidates) == 0 {
		return nil, nil
	}
	return slices.MinFunc(candidates, func(a, b *sluicev1.Task) int {
		return a.GetStartTime().AsTime().Compare(b.GetStartTime().AsTime())
	}), nil
}

// rethrottle sends a changed requestsPerSecond to a task that still runs.
func (r *Reconciler) rethrottle(ctx context.Context, rx *v1alpha1.Reindex, task *sluicev1.Task) (*sluicev1.Task, error) {
	want := requestsPerSecond(&rx.Spec)
	if taskEnded(task.GetState()) || task.GetReindex().GetRequestsPerSecond() == want {
		return task, nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := r.Cluster.RethrottleTask(cctx, &sluicev1.RethrottleTaskRequest{Id: task.GetId(), RequestsPerSecond: want})
	if status.Code(err) == codes.FailedPrecondition {
		return task, nil // it ended meanwhile; the next GetTask shows how
	}
	if err != nil {
		return nil, err
	}
	r.event(rx, corev1.EventTypeNormal, "Rethrottled", "Rethrottle", "task %s: requestsPerSecond %g", task.GetId(), want)
	if resp.GetTask() != nil {
		return resp.GetTask(), nil
	}
	return task, nil
}

// mirror copies the task's state into status and derives the conditions.
func (r *Reconciler) mirror(_ context.Context, rx *v1alpha1.Reindex, task *sluicev1.Task) outcome {
	st := &rx.Status
	prev := st.Phase
	ts := task.GetReindex()
	st.Phase = phase(task.GetState())
	st.ReindexCounts = v1alpha1.ReindexCounts{Total: ts.GetTotal(), Created: ts.GetCreated(), Updated: ts.GetUpdated(),
		VersionConflicts: ts.GetVersionConflicts(), Failures: ts.GetFailures()}
	st.DocsPerSecond = int64(ts.GetDocsPerSecond())
	st.Progress = progress(st.Phase, st.ReindexCounts)
	st.Slices = st.Slices[:0]
	for _, s := range ts.GetSlices() {
		st.Slices = append(st.Slices, v1alpha1.ReindexSliceStatus{ID: s.GetSlice(), ReindexCounts: v1alpha1.ReindexCounts{Total: s.GetTotal()},
			Copied: s.GetCopied(), Done: taskEnded(s.GetState()), CopyMethod: copyMethodOf(s.GetCopyMethod())})
	}
	st.CopyMethod, st.CopyMethodReason = copyMethodOf(ts.GetCopyMethod()), ts.GetCopyMethodReason()
	if len(st.Slices) == 0 {
		st.Slices = nil
	}
	if t := task.GetStartTime(); t != nil {
		mt := metav1.NewTime(t.AsTime())
		st.StartTime = &mt
	}
	if t := task.GetEndTime(); t != nil {
		mt := metav1.NewTime(t.AsTime())
		st.CompletionTime = &mt
	}
	if st.Phase != prev && terminal(st.Phase) {
		typ := corev1.EventTypeNormal
		if st.Phase == v1alpha1.ReindexFailed {
			typ = corev1.EventTypeWarning
		}
		r.event(rx, typ, string(st.Phase), "Follow", "task %s %s: %d created, %d updated, %d conflicts, %d failures",
			task.GetId(), phaseVerb(st.Phase), st.Created, st.Updated, st.VersionConflicts, st.Failures)
	}
	failures := conditions.Cond{}
	if st.Failures > 0 {
		failures = conditions.Cond{True: true, Reason: conditions.ReasonDocumentFailures,
			Message: fmt.Sprintf("%d documents could not be written%s", st.Failures, sample(ts))}
	}
	switch task.GetState() {
	case sluicev1.TaskState_TASK_STATE_SUCCEEDED:
		return outcome{status: conditions.Status{
			Ready:    conditions.Cond{True: true, Reason: conditions.ReasonSucceeded, Message: fmt.Sprintf("copied %d of %d documents", st.Created+st.Updated, st.Total)},
			Degraded: failures,
		}}
	case sluicev1.TaskState_TASK_STATE_FAILED:
		msg := fmt.Sprintf("task %s failed: %s", task.GetId(), task.GetError().GetReason())
		return outcome{status: conditions.Status{
			Ready:    conditions.Cond{Reason: conditions.ReasonTaskFailed, Message: msg},
			Degraded: conditions.Cond{True: true, Reason: conditions.ReasonTaskFailed, Message: msg},
		}}
	case sluicev1.TaskState_TASK_STATE_CANCELLED:
		msg := fmt.Sprintf("task %s was cancelled", task.GetId())
		return outcome{status: conditions.Status{
			Ready:       conditions.Cond{Reason: conditions.ReasonCancelled, Message: msg},
			Progressing: conditions.Cond{Reason: conditions.ReasonCancelled, Message: msg},
		}}
	}
	reason := conditions.ReasonTaskRunning
	switch task.GetState() {
	case sluicev1.TaskState_TASK_STATE_PENDING:
		reason = conditions.ReasonTaskPending
	case sluicev1.TaskState_TASK_STATE_VERIFYING:
		reason = conditions.ReasonTaskVerifying
	}
	msg := fmt.Sprintf("task %s: %s of %d documents, %d docs/s", task.GetId(), st.Progress, st.Total, st.DocsPerSecond)
	return outcome{requeue: Poll, status: conditions.Status{
		Ready:       conditions.Cond{Reason: reason, Message: msg},
		Progressing: conditions.Cond{True: true, Reason: reason, Message: msg},
		Degraded:    failures,
	}}
}

func sample(ts *sluicev1.ReindexStatus) string {
	if f := ts.GetFailureSamples(); len(f) > 0 {
		return fmt.Sprintf(", e.g. in shard %d of %s: %s", f[0].GetShard(), f[0].GetIndex(), f[0].GetError().GetReason())
	}
	return ""
}

// progress is the share of documents processed, for display.
func progress(p v1alpha1.ReindexPhase, c v1alpha1.ReindexCounts) string {
	if p == v1alpha1.ReindexSucceeded {
		return "100%"
	}
	if c.Total <= 0 {
		return "0%"
	}
	done := c.Created + c.Updated + c.VersionConflicts + c.Failures
	return fmt.Sprintf("%d%%", min(done*100/c.Total, 100))
}

func phase(s sluicev1.TaskState) v1alpha1.ReindexPhase {
	switch s {
	case sluicev1.TaskState_TASK_STATE_RUNNING, sluicev1.TaskState_TASK_STATE_VERIFYING:
		return v1alpha1.ReindexRunning
	case sluicev1.TaskState_TASK_STATE_SUCCEEDED:
		return v1alpha1.ReindexSucceeded
	case sluicev1.TaskState_TASK_STATE_FAILED:
		return v1alpha1.ReindexFailed
	case sluicev1.TaskState_TASK_STATE_CANCELLED:
		return v1alpha1.ReindexCancelled
	}
	return v1alpha1.ReindexPending
}

func phaseVerb(p v1alpha1.ReindexPhase) string {
	switch p {
	case v1alpha1.ReindexSucceeded:
		return "succeeded"
	case v1alpha1.ReindexFailed:
		return "failed"
	}
	return "was cancelled"
}

func terminal(p v1alpha1.ReindexPhase) bool {
	return p == v1alpha1.ReindexSucceeded || p == v1alpha1.ReindexFailed || p == v1alpha1.ReindexCancelled
}

func taskEnded(s sluicev1.TaskState) bool {
	return s == sluicev1.TaskState_TASK_STATE_SUCCEEDED || s == sluicev1.TaskState_TASK_STATE_FAILED || s == sluicev1.TaskState_TASK_STATE_CANCELLED
}

// waiting reports a precondition the cluster does not meet yet (a missing
// index), retried with backoff.
func (r *Reconciler) waiting(rx *v1alpha1.Reindex, msg string) outcome {
	rx.Status.Phase = v1alpha1.ReindexPending
	return outcome{requeue: conditions.Backoff(rx.Status.Conditions), status: conditions.Status{
		Ready:       conditions.Cond{Reason: conditions.ReasonTaskPending, Message: msg},
		Progressing: conditions.Cond{True: true, Reason: conditions.ReasonTaskPending, Message: msg},
		Degraded:    conditions.Cond{True: true, Reason: conditions.ReasonClusterError, Message: msg},
	}}
}

// failInvalid ends a Reindex whose spec can never run: its fields are
// immutable, so only a new resource can fix it.
func (r *Reconciler) failInvalid(rx *v1alpha1.Reindex, msg string) outcome {
	r.event(rx, corev1.EventTypeWarning, conditions.ReasonInvalidSpec, "Start", "%s", msg)
	rx.Status.Phase = v1alpha1.ReindexFailed
	now := metav1.Now()
	rx.Status.CompletionTime = &now
	return outcome{status: conditions.Status{
		Ready:    conditions.Cond{Reason: conditions.ReasonInvalidSpec, Message: msg},
		Degraded: conditions.Cond{True: true, Reason: conditions.ReasonInvalidSpec, Message: msg},
	}}
}

// clusterError reports a failed call: UNIMPLEMENTED is a cluster without
// reindex support, refusals of the spec end the Reindex, the rest retries.
func (r *Reconciler) clusterError(rx *v1alpha1.Reindex, action, doing string, err error) outcome {
	msg := fmt.Sprintf("%s: %s", doing, status.Convert(err).Message())
	if status.Code(err) == codes.Unimplemented {
		if conditions.Reason(rx.Status.Conditions, v1alpha1.ConditionDegraded) != conditions.ReasonReindexUnsupported {
			r.event(rx, corev1.EventTypeWarning, conditions.ReasonReindexUnsupported, action, "%s", msg)
		}
		if rx.Status.Phase == "" {
			rx.Status.Phase = v1alpha1.ReindexPending
		}
		msg = "the cluster does not support reindex tasks yet: " + msg
		return outcome{requeue: unsupportedRetry, status: conditions.Status{
			Ready:    conditions.Cond{Reason: conditions.ReasonReindexUnsupported, Message: msg},
			Degraded: conditions.Cond{True: true, Reason: conditions.ReasonReindexUnsupported, Message: msg},
		}}
	}
	reason, retryable := conditions.ClusterReason(err)
	if !retryable && rx.Status.TaskID == "" {
		return r.failInvalid(rx, msg)
	}
	r.event(rx, corev1.EventTypeWarning, reason, action, "%s", msg)
	if rx.Status.Phase == "" {
		rx.Status.Phase = v1alpha1.ReindexPending
	}
	return outcome{requeue: conditions.Backoff(rx.Status.Conditions), status: conditions.Status{
		Ready:       conditions.Cond{Reason: reason, Message: msg},
		Progressing: conditions.Cond{True: true, Reason: reason, Message: "waiting for the cluster"},
		Degraded:    conditions.Cond{True: true, Reason: reason, Message: msg},
	}}
}

// finalize cancels a task that has not ended, then releases the resource.
func (r *Reconciler) finalize(ctx context.Context, rx *v1alpha1.Reindex) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(rx, Finalizer) {
		return ctrl.Result{}, nil
	}
	if id := rx.Status.TaskID; id != "" && !terminal(rx.Status.Phase) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := r.Cluster.CancelTask(cctx, &sluicev1.CancelTaskRequest{Id: id})
		cancel()
		switch status.Code(err) {
		case codes.OK:
			r.event(rx, corev1.EventTypeNormal, conditions.ReasonCancelled, "Cancel", "cancelled task %s: the Reindex was deleted", id)
		case codes.NotFound, codes.FailedPrecondition, codes.Unimplemented:
			// Gone, already ended, or a cluster without tasks: nothing to
			// cancel.
		default:
			res := r.clusterError(rx, "Cancel", "cancelling task "+id, err)
			conditions.Set(&rx.Status.Conditions, rx.Generation, res.status)
			if err := r.Client.Status().Update(ctx, rx); err != nil {
				return conditions.RequeueOnConflict(client.IgnoreNotFound(err))
			}
			return ctrl.Result{RequeueAfter: res.requeue}, nil
		}
	}
	return r.release(ctx, rx)
}

// release removes the finalizer.
func (r *Reconciler) release(ctx context.Context, rx *v1alpha1.Reindex) (ctrl.Result, error) {
	if controllerutil.RemoveFinalizer(rx, Finalizer) {
		if err := r.Client.Update(ctx, rx); err != nil {
			return conditions.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) event(rx *v1alpha1.Reindex, typ, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(rx, nil, typ, reason, action, note, args...)
	}
}

// copyMethodOf is the CRD's name for a task's copy method ("" unset).
func copyMethodOf(m sluicev1.ReindexCopyMethod) v1alpha1.ReindexCopyMethod {
	switch m {
	case sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_SEGMENTS:
		return v1alpha1.ReindexCopySegments
	case sluicev1.ReindexCopyMethod_REINDEX_COPY_METHOD_DOCUMENTS:
		return v1alpha1.ReindexCopyDocuments
	}
	return ""
}
