// Package conditions holds the status vocabulary the Sluice reconcilers
// share: the reasons they put on the Ready, Progressing and Degraded
// conditions, and Set, which writes all three at once so a reconcile never
// leaves a stale one behind (Ready=True next to an old Degraded=True).
//
// Conditions follow the Kubernetes API conventions: metav1.Condition with
// observedGeneration, set through meta.SetStatusCondition so
// lastTransitionTime only moves when the status flips.
package conditions

import (
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/sluice-search/sluice/operator/api/v1alpha1"
)

// Reasons shared by both reconcilers. Reasons are CamelCase identifiers
// (the API server checks the pattern); messages carry the details.
const (
	// ReasonClusterUnreachable: the coordinator could not be reached or
	// answered UNAVAILABLE / DEADLINE_EXCEEDED; the operator retries, and
	// an Index's health is unknown meanwhile.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonInvalidSpec: the spec cannot be applied (the operator or the
	// cluster refused it); nothing is retried until the spec changes.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonClusterError: the cluster answered an unexpected error.
	ReasonClusterError = "ClusterError"
	// ReasonAsExpected is the reason of a condition that is False because
	// nothing is wrong (Degraded) or nothing is left to do (Progressing).
	ReasonAsExpected = "AsExpected"
)

// Index reasons.
const (
	ReasonCreating           = "Creating"
	ReasonIndexCreated       = "IndexCreated"
	ReasonIndexReady         = "IndexReady"
	ReasonShardsInitializing = "ShardsInitializing"
	ReasonShardsUnassigned   = "ShardsUnassigned"
	ReasonUpdating           = "Updating"
	ReasonDeleting           = "Deleting"
)

// Reindex reasons.
const (
	ReasonStartingTask       = "StartingTask"
	ReasonTaskPending        = "TaskPending"
	ReasonTaskRunning        = "TaskRunning"
	ReasonTaskVerifying      = "TaskVerifying"
	ReasonSucceeded          = "Succeeded"
	ReasonTaskFailed         = "TaskFailed"
	ReasonCancelled          = "Cancelled"
	ReasonTaskLost           = "TaskLost"
	ReasonDocumentFailures   = "DocumentFailures"
	ReasonReindexUnsupported = "ReindexUnsupported"
)

// Status is one value of each condition. A zero Reason defaults to
// ReasonAsExpected for a False condition.
type Status struct {
	Ready       Cond
	Progressing Cond
	Degraded    Cond
}

// Cond is the status, reason and message of one condition.
type Cond struct {
	True    bool
	Reason  string
	Message string
}

// Set writes the three conditions of s into conds for generation.
// It returns whether anything but lastTransitionTime bookkeeping changed.
func Set(conds *[]metav1.Condition, generation int64, s Status) bool {
	changed := false
	for _, c := range []struct {
		typ string
		c   Cond
	}{
		{v1alpha1.ConditionReady, s.Ready},
		{v1alpha1.ConditionProgressing, s.Progressing},
		{v1alpha1.ConditionDegraded, s.Degraded},
	} {
		st, reason := metav1.ConditionFalse, c.c.Reason
		if c.c.True {
			st = metav1.ConditionTrue
		}
		if reason == "" {
			reason = ReasonAsExpected
		}
		if meta.SetStatusCondition(conds, metav1.Condition{
			Type: c.typ, Status: st, Reason: reason, Message: truncate(c.c.Message), ObservedGeneration: generation,
		}) {
			changed = true
		}
	}
	return changed
}

// IsTrue reports whether condition typ is True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// Reason is the reason of condition typ, "" if absent.
func Reason(conds []metav1.Condition, typ string) string {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Reason
	}
	return ""
}

// maxMessage is the API's limit on a condition message.
const maxMessage = 32768

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage-3], "") + "..."
}

// ClusterReason classifies an error from the coordinator: the condition
// reason to report and whether retrying without a spec change can help.
// UNAVAILABLE, DEADLINE_EXCEEDED and a cancelled call mean the cluster was
// not reached; INVALID_ARGUMENT, FAILED_PRECONDITION and ALREADY_EXISTS mean
// the spec itself is refused; anything else is retried as a cluster error.
func ClusterReason(err error) (reason string, retry bool) {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return ReasonClusterUnreachable, true
	case codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists, codes.OutOfRange:
		return ReasonInvalidSpec, false
	default:
		return ReasonClusterError, true
	}
}

// Backoff bounds.
const (
	MinBackoff = 2 * time.Second
	// MaxBackoff keeps the recovery after an outage within seconds. (Up
	// to a minute, it made status lag the cluster's return by as much.)
	// The operator also reconciles everything at once when its connection
	// to the cluster comes back (manager), so this is the fallback.
	MaxBackoff = 10 * time.Second
)

// Backoff is the retry delay after a failed call to the cluster: half the
// time Degraded has been True, from MinBackoff up to MaxBackoff, so a
// short outage is noticed quickly and a long one costs a failed call per
// resource every few seconds. It needs no memory beyond the resource's own
// status.
func Backoff(conds []metav1.Condition) time.Duration {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue {
		return MinBackoff
	}
	return min(max(time.Since(c.LastTransitionTime.Time)/2, MinBackoff), MaxBackoff)
}

// ConflictRetry is the requeue after a write conflict on the resource.
const ConflictRetry = 200 * time.Millisecond

// RequeueOnConflict turns an optimistic-concurrency conflict into a quiet,
// prompt requeue (someone else wrote the resource: read it again); other
// errors are returned for controller-runtime's backoff.
func RequeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: ConflictRetry}, nil
	}
	return ctrl.Result{}, err
}
