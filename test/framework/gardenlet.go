package framework

import (
	"context"
	"fmt"
	"regexp"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LastOperation is "<type> <state>" of the Extension's last operation, ""
// when it has none.
func LastOperation(ex *extensionsv1alpha1.Extension) string {
	if ex.Status.LastOperation == nil {
		return ""
	}
	return fmt.Sprintf("%s %s", ex.Status.LastOperation.Type, ex.Status.LastOperation.State)
}

// WaitForLastOperation reads the Extension until its last operation matches.
func WaitForLastOperation(ctx context.Context, c client.Client, ex *extensionsv1alpha1.Extension, want *regexp.Regexp, timeout time.Duration) error {
	return WaitUntil(ctx, timeout, func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err
		}
		if op := LastOperation(ex); !want.MatchString(op) {
			if ex.Status.LastError != nil {
				return fmt.Errorf("extension %s/%s: last operation %q, last error %q", ex.Namespace, ex.Name, op, ex.Status.LastError.Description)
			}
			return fmt.Errorf("extension %s/%s: last operation %q, want %s", ex.Namespace, ex.Name, op, want)
		}
		return nil
	})
}

// Reconcile creates an Extension with gardenlet's reconcile annotation.
func Reconcile(ctx context.Context, c client.Client, namespace, extensionType string, providerConfig []byte) (*extensionsv1alpha1.Extension, error) {
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: extensionType, Namespace: namespace, Annotations: map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.GardenerOperationReconcile}},
		Spec:       extensionsv1alpha1.ExtensionSpec{DefaultSpec: extensionsv1alpha1.DefaultSpec{Type: extensionType, ProviderConfig: &runtime.RawExtension{Raw: providerConfig}}},
	}
	return ex, c.Create(ctx, ex)
}

// Migrate does what gardenlet does on the source seed of a control plane
// migration: annotate the Extension with migrate, wait for Migrate
// Succeeded, take its state and delete it shallowly (the extension's Delete
// does not run: the finalizers are gone after Migrate).
func Migrate(ctx context.Context, c client.Client, ex *extensionsv1alpha1.Extension, timeout time.Duration) (*runtime.RawExtension, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
		return nil, err
	}
	metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationMigrate)
	if err := c.Update(ctx, ex); err != nil {
		return nil, err
	}
	if err := WaitForLastOperation(ctx, c, ex, regexp.MustCompile(`^Migrate Succeeded$`), timeout); err != nil {
		return nil, err
	}
	state := ex.Status.State.DeepCopy()
	if err := c.Delete(ctx, ex); err != nil {
		return nil, fmt.Errorf("deleting the migrated Extension: %w", err)
	}
	return state, WaitUntil(ctx, timeout, func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("migrated extension %s/%s still exists (finalizers %v)", ex.Namespace, ex.Name, ex.Finalizers)
	})
}

// Restore does what gardenlet does on the destination seed: create the
// Extension with wait-for-state, write the state saved by Migrate, then
// annotate it with restore, and wait until the restore succeeded.
func Restore(ctx context.Context, c client.Client, migrated *extensionsv1alpha1.Extension, state *runtime.RawExtension, timeout time.Duration) (*extensionsv1alpha1.Extension, error) {
	ex := &extensionsv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: migrated.Name, Namespace: migrated.Namespace},
		Spec:       migrated.Spec,
	}
	if err := PrepareRestore(ctx, c, ex, state, timeout); err != nil {
		return nil, err
	}
	if err := WaitUntil(ctx, timeout, func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationRestore)
		return c.Update(ctx, ex)
	}); err != nil {
		return nil, fmt.Errorf("annotating restore: %w", err)
	}
	// Gardener's generic reconciler may report the restore as a reconcile.
	return ex, WaitForLastOperation(ctx, c, ex, regexp.MustCompile(`^(Restore|Reconcile) Succeeded$`), timeout)
}

// PrepareRestore does gardenlet's first restore steps on the destination
// seed: create ex with wait-for-state, then write the state saved by Migrate
// and a pending Restore. The restore annotation is left to the caller, so a
// test can act in between.
func PrepareRestore(ctx context.Context, c client.Client, ex *extensionsv1alpha1.Extension, state *runtime.RawExtension, timeout time.Duration) error {
	metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationWaitForState)
	if err := c.Create(ctx, ex); err != nil {
		return err
	}
	// The extension may write the object meanwhile: retry on conflicts.
	if err := WaitUntil(ctx, timeout, func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return err
		}
		ex.Status.State = state
		ex.Status.LastOperation = &gardencorev1beta1.LastOperation{Type: gardencorev1beta1.LastOperationTypeRestore, State: gardencorev1beta1.LastOperationStatePending, LastUpdateTime: metav1.Now()}
		return c.Status().Update(ctx, ex)
	}); err != nil {
		return fmt.Errorf("writing the state: %w", err)
	}
	return nil
}

// UpdateProviderConfig changes the Extension's providerConfig and asks for a
// reconcile, as gardenlet does when the shoot's spec changes.
func UpdateProviderConfig(ctx context.Context, c client.Client, ex *extensionsv1alpha1.Extension, providerConfig []byte) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
		return err
	}
	ex.Spec.ProviderConfig = &runtime.RawExtension{Raw: providerConfig}
	metav1.SetMetaDataAnnotation(&ex.ObjectMeta, v1beta1constants.GardenerOperation, v1beta1constants.GardenerOperationReconcile)
	return c.Update(ctx, ex)
}
