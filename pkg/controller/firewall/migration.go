package firewall

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// state is what travels in Extension.status.state from the source seed to
// the destination seed: enough to recreate the sets and Firewalls under the
// same names, and for each Firewall the machine it already has.
type state struct {
	// FirewallDeployments carry what the providerConfig does not tell: the
	// roll annotation (a roll asked from the shoot) and the image and agent
	// held back for the maintenance window. Without them the restored
	// deployment would roll at once.
	FirewallDeployments []firewallv1alpha1.FirewallDeployment `json:"firewallDeployments,omitempty"`
	FirewallSets        []firewallv1alpha1.FirewallSet        `json:"firewallSets,omitempty"`
	Firewalls           []firewallv1alpha1.Firewall           `json:"firewalls,omitempty"`
	// DeliveryKeys are, by Firewall name, the private keys that sign what
	// the destination seed delivers to the agents through the shoot, with
	// the last generation delivered. The agents pinned their public halves
	// from this seed; only the state carries the private ones across.
	DeliveryKeys map[string]map[string][]byte `json:"deliveryKeys,omitempty"`
}

// Migrate hands the firewall over without touching the machine: every
// object is paused first so that no controller of this seed acts on it any
// more, their identities go into status.state, and the objects are removed
// without their finalizers, children first. The machine keeps
// forwarding with its last rules. The shoot's objects stay where they are;
// this seed's ManagedResource and credentials for the shoot go.
func (a *actuator) Migrate(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	var objs []client.Object
	deployments := &firewallv1alpha1.FirewallDeploymentList{}
	sets := &firewallv1alpha1.FirewallSetList{}
	fws := &firewallv1alpha1.FirewallList{}
	for _, list := range []client.ObjectList{deployments, sets, fws} {
		if err := a.direct.List(ctx, list, client.InNamespace(ex.Namespace)); err != nil {
			return err
		}
	}
	for i := range deployments.Items {
		objs = append(objs, &deployments.Items[i])
	}
	for i := range sets.Items {
		objs = append(objs, &sets.Items[i])
	}
	for i := range fws.Items {
		objs = append(objs, &fws.Items[i])
	}

	// Pause first: from here on the manager of this seed leaves them alone.
	for _, obj := range objs {
		if err := a.annotate(ctx, obj, firewallv1alpha1.AnnotationPaused, "true"); err != nil {
			return fmt.Errorf("pausing %s: %w", obj.GetName(), err)
		}
	}

	st := state{}
	for _, d := range deployments.Items {
		st.FirewallDeployments = append(st.FirewallDeployments, firewallv1alpha1.FirewallDeployment{ObjectMeta: portableMeta(d.ObjectMeta), Spec: d.Spec})
	}
	for _, s := range sets.Items {
		st.FirewallSets = append(st.FirewallSets, firewallv1alpha1.FirewallSet{ObjectMeta: portableMeta(s.ObjectMeta), Spec: s.Spec})
	}
	for _, fw := range fws.Items {
		st.Firewalls = append(st.Firewalls, firewallv1alpha1.Firewall{
			ObjectMeta: portableMeta(fw.ObjectMeta),
			Spec:       fw.Spec,
			Status:     firewallv1alpha1.FirewallStatus{MachineStatus: fw.Status.MachineStatus},
		})
		key, err := a.deliveryKey(ctx, ex.Namespace, fw.Name)
		if err != nil {
			return err
		}
		if key != nil {
			if st.DeliveryKeys == nil {
				st.DeliveryKeys = map[string]map[string][]byte{}
			}
			st.DeliveryKeys[fw.Name] = key
		}
	}
	if saved, ok := savedState(ex); ok && saved.covers(st) {
		// A Migrate that died after saving the state and deleting some
		// objects: what is left is a part of what was saved. Overwriting the
		// state with that part would lose the deleted Firewalls' machines,
		// and the restore would create second ones.
		log.Info("Keeping the firewall state saved by an earlier run of this migration", "firewallSets", len(saved.FirewallSets), "firewalls", len(saved.Firewalls))
	} else {
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		patch := client.MergeFrom(ex.DeepCopy())
		ex.Status.State = &runtime.RawExtension{Raw: raw}
		if err := a.client.Status().Patch(ctx, ex, patch); err != nil {
			return fmt.Errorf("saving the state: %w", err)
		}
		log.Info("Saved firewall state", "firewallSets", len(st.FirewallSets), "firewalls", len(st.Firewalls))
	}

	// The shoot's objects are released before the Firewalls go: the
	// metrics' ManagedResource would otherwise go with the last Firewall,
	// and its slices with it.
	if err := a.releaseShootResources(ctx, ex.Namespace); err != nil {
		return err
	}
	// Children before owners, each without finalizers: nothing is left for a
	// cascade, and a paused object without finalizer cannot release a machine.
	// (Orphan propagation would add the garbage collector's "orphan" finalizer
	// and make the handover wait for it, for no gain.)
	for i := len(objs) - 1; i >= 0; i-- {
		obj := objs[i]
		if len(obj.GetFinalizers()) > 0 {
			patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
			obj.SetFinalizers(nil)
			if err := a.client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if err := a.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return a.deleteCredentials(ctx, ex.Namespace)
}

// Restore recreates the sets and Firewalls from status.state under their old
// names, each Firewall with its machine ID, and then reconciles: the new
// deployment adopts the sets, the sets adopt the Firewalls, and the provider
// finds each machine by its ID, so no second machine is ever created.
func (a *actuator) Restore(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	if err := a.restoreState(ctx, log, ex); err != nil {
		return err
	}
	return a.Reconcile(ctx, log, ex)
}

// restoreState recreates the objects of ex's status.state.
func (a *actuator) restoreState(ctx context.Context, log logr.Logger, ex *extensionsv1alpha1.Extension) error {
	if ex.Status.State != nil && len(ex.Status.State.Raw) > 0 {
		st := state{}
		if err := json.Unmarshal(ex.Status.State.Raw, &st); err != nil {
			return fmt.Errorf("status.state: %w", err)
		}
		// The delivery keys before their Firewalls: a Firewall without its
		// Secret would get a new key that its agent never pinned.
		for name, data := range st.DeliveryKeys {
			if err := a.restoreDeliveryKey(ctx, ex.Namespace, name, data); err != nil {
				return err
			}
		}
		// Firewalls first: a set that came first would see no Firewall and
		// (under the same name, so harmlessly, but needlessly) try to create one.
		for _, fw := range st.Firewalls {
			obj := fw.DeepCopy()
			obj.Namespace = ex.Namespace
			if err := a.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("restoring Firewall %s: %w", fw.Name, err)
			}
			// Past the cache: one that has not seen the Firewall just created
			// failed the restore with "not found" (seen in CI under load). Again
			// on a conflict: the manager writes the new Firewall's status too,
			// and a failed restore is retried at once by Gardener's reconciler,
			// whose status patch from its stale cache then left "Restore Error"
			// standing while the retry waited (seen in CI).
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := a.direct.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
					return err
				}
				if obj.Status.MachineStatus != nil || fw.Status.MachineStatus == nil {
					return nil
				}
				obj.Status.MachineStatus = fw.Status.MachineStatus
				return a.client.Status().Update(ctx, obj)
			}); err != nil {
				return fmt.Errorf("restoring the machine ID of Firewall %s: %w", fw.Name, err)
			}
		}
		for _, s := range st.FirewallSets {
			obj := s.DeepCopy()
			obj.Namespace = ex.Namespace
			if err := a.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("restoring FirewallSet %s: %w", s.Name, err)
			}
		}
		// The deployment last: it adopts the sets rather than creating its own.
		for _, d := range st.FirewallDeployments {
			obj := d.DeepCopy()
			obj.Namespace = ex.Namespace
			if err := a.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("restoring FirewallDeployment %s: %w", d.Name, err)
			}
			// Reconcile reads it through the cache: one that has not seen it
			// yet would create it a second time and fail.
			if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return a.client.Get(ctx, client.ObjectKeyFromObject(obj), &firewallv1alpha1.FirewallDeployment{}) == nil, nil
			}); err != nil {
				return fmt.Errorf("restored FirewallDeployment %s not seen: %w", d.Name, err)
			}
		}
		log.Info("Restored firewall state", "firewallSets", len(st.FirewallSets), "firewalls", len(st.Firewalls))
	}
	return nil
}

// releaseObjects removes every firewall object of the namespace without
// waiting for a controller.
func (a *actuator) releaseObjects(ctx context.Context, namespace string) error {
	deployments := &firewallv1alpha1.FirewallDeploymentList{}
	sets := &firewallv1alpha1.FirewallSetList{}
	fws := &firewallv1alpha1.FirewallList{}
	for _, list := range []client.ObjectList{fws, sets, deployments} {
		if err := a.direct.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return err
		}
	}
	var objs []client.Object
	for i := range fws.Items {
		objs = append(objs, &fws.Items[i])
	}
	for i := range sets.Items {
		objs = append(objs, &sets.Items[i])
	}
	for i := range deployments.Items {
		objs = append(objs, &deployments.Items[i])
	}
	for _, obj := range objs {
		patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
		obj.SetFinalizers(nil)
		if err := a.client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
		if err := a.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func (a *actuator) annotate(ctx context.Context, obj client.Object, key, value string) error {
	if obj.GetAnnotations()[key] == value {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = value
	obj.SetAnnotations(annotations)
	return client.IgnoreNotFound(a.client.Patch(ctx, obj, patch))
}

// portableMeta keeps what identifies an object across seeds: name, labels,
// annotations (without the pause, which belongs to the source seed).
func portableMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	annotations := maps.Clone(m.Annotations)
	delete(annotations, firewallv1alpha1.AnnotationPaused)
	return metav1.ObjectMeta{Name: m.Name, Labels: m.Labels, Annotations: annotations}
}

// savedState is the state in the Extension's status, if any.
func savedState(ex *extensionsv1alpha1.Extension) (*state, bool) {
	if ex.Status.State == nil || len(ex.Status.State.Raw) == 0 {
		return nil, false
	}
	st := &state{}
	if err := json.Unmarshal(ex.Status.State.Raw, st); err != nil {
		return nil, false
	}
	return st, len(st.FirewallSets)+len(st.Firewalls) > 0
}

// covers tells whether every set and Firewall of current is in s under the
// same name (and each Firewall with the same machine).
func (s *state) covers(current state) bool {
	sets := map[string]bool{}
	for _, set := range s.FirewallSets {
		sets[set.Name] = true
	}
	for _, set := range current.FirewallSets {
		if !sets[set.Name] {
			return false
		}
	}
	machines := map[string]string{}
	for _, fw := range s.Firewalls {
		machines[fw.Name] = machineID(&fw)
	}
	for _, fw := range current.Firewalls {
		if id, ok := machines[fw.Name]; !ok || id != machineID(&fw) {
			return false
		}
	}
	return true
}

func machineID(fw *firewallv1alpha1.Firewall) string {
	if fw.Status.MachineStatus == nil {
		return ""
	}
	return fw.Status.MachineStatus.MachineID
}
