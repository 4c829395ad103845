package scaledown

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrInvalid marks a pod that cannot be a pod of the StatefulSet named
// (its name is not <statefulset>-<ordinal>).
var ErrInvalid = errors.New("invalid")

// Pod names a data node's pod and the StatefulSet it belongs to.
type Pod struct {
	Namespace   string
	StatefulSet string
	Name        string
}

// Ordinal is the pod's ordinal: what follows the StatefulSet's name and a
// dash in the pod's name, as the StatefulSet controller names its pods.
func (p Pod) Ordinal() (int, error) {
	rest, ok := strings.CutPrefix(p.Name, p.StatefulSet+"-")
	n, err := strconv.Atoi(rest)
	if p.StatefulSet == "" || !ok || err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, fmt.Errorf("%w: pod [%s] is not a pod of StatefulSet [%s] (<statefulset>-<ordinal>)", ErrInvalid, p.Name, p.StatefulSet)
	}
	return n, nil
}

// Decision is whether a pod is leaving its StatefulSet for good.
type Decision struct {
	// Leaving: the StatefulSet no longer counts the pod's ordinal, so the
	// pod is deleted by a scale-down and not created again.
	Leaving bool
	Ordinal int
	// Replicas and Start are the StatefulSet's spec.replicas and
	// spec.ordinals.start (0 when unset); -1 when unknown.
	Replicas, Start int32
	// Reason says why, for the log.
	Reason string
}

// Decide reads the pod's StatefulSet and says whether the pod is leaving
// (its ordinal is outside [start, start+replicas)) or restarting. A
// StatefulSet that is not found, being deleted, or scaled to 0 is not a
// scale-down that a drain could serve: the pod is not leaving. An error of
// the API is returned; the caller treats it as a restart.
func Decide(ctx context.Context, kube kubernetes.Interface, p Pod) (Decision, error) {
	d := Decision{Replicas: -1, Start: -1}
	var err error
	if d.Ordinal, err = p.Ordinal(); err != nil {
		return d, err
	}
	sts, err := kube.AppsV1().StatefulSets(p.Namespace).Get(ctx, p.StatefulSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		d.Reason = fmt.Sprintf("StatefulSet %s/%s not found: it was deleted with its pods, there is nowhere to move copies to", p.Namespace, p.StatefulSet)
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("get StatefulSet %s/%s: %w", p.Namespace, p.StatefulSet, err)
	}
	d.Replicas, d.Start = 1, 0 // the API's defaults
	if sts.Spec.Replicas != nil {
		d.Replicas = *sts.Spec.Replicas
	}
	if sts.Spec.Ordinals != nil {
		d.Start = sts.Spec.Ordinals.Start
	}
	switch ord := int64(d.Ordinal); {
	case sts.DeletionTimestamp != nil:
		d.Reason = fmt.Sprintf("StatefulSet %s/%s is being deleted with its pods: there is nowhere to move copies to", p.Namespace, p.StatefulSet)
	case d.Replicas == 0:
		d.Reason = fmt.Sprintf("StatefulSet %s/%s is scaled to 0: every data node stops, and their copies stay on their volumes", p.Namespace, p.StatefulSet)
	case ord >= int64(d.Start) && ord < int64(d.Start)+int64(d.Replicas):
		d.Reason = fmt.Sprintf("ordinal %d is within the StatefulSet's %d replicas from %d: a restart, the node's copies stay for its return", d.Ordinal, d.Replicas, d.Start)
	default:
		d.Leaving = true
		d.Reason = fmt.Sprintf("ordinal %d is outside the StatefulSet's %d replicas from %d: a scale-down removes the pod", d.Ordinal, d.Replicas, d.Start)
	}
	return d, nil
}
