package main

import (
	"context"
	"errors"
	"strings"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// cleanup removes everything of the run, whatever state it stopped in: the
// Extensions through the extension (so that it releases the machine as in a
// real landscape), then the extensions, the control planes, and at last by
// name whatever is left: processes, namespaces, the run's folder. ctx ends
// the graceful part early.
func (d *demo) cleanup(ctx context.Context) error {
	d.n.section("Cleanup")
	if d.kept != nil {
		_ = d.kept.Close()
	}
	var errs []error
	if s := d.owner; s != nil && s.c != nil && s.stop != nil && ctx.Err() == nil {
		if err := d.deleteExtensions(ctx, s); err != nil {
			d.n.say("Could not delete the Extensions gracefully: %v", err)
		}
	}
	if d.site != nil {
		// The machine is released (or the graceful part ended); then the site goes.
		defer d.site.close()
	}
	for _, s := range []*seed{d.seedB, d.seedA} {
		if s != nil && s.stop != nil {
			if err := s.stop(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	var stopped []string
	for _, cp := range []struct {
		name string
		s    *seed
	}{{"seed B", d.seedB}, {"seed A", d.seedA}} {
		if cp.s != nil && cp.s.cp != nil {
			if err := cp.s.cp.Stop(); err != nil {
				errs = append(errs, err)
			}
			stopped = append(stopped, cp.name)
		}
	}
	if d.shoot != nil {
		if err := d.shoot.Stop(); err != nil {
			errs = append(errs, err)
		}
		stopped = append(stopped, "the shoot")
	}
	if len(stopped) > 0 {
		d.n.say("Stopped the extensions and the control planes of %s", strings.Join(stopped, ", "))
	}
	for _, err := range errs {
		d.n.say("While stopping: %v", err)
	}
	if _, err := sweep(d.run, d.n.say); err != nil {
		return err
	}
	d.n.say("Nothing of run %s is left: no process, network namespace or folder named %s*", d.run.id, d.run.name())
	return nil
}

// deleteExtensions deletes the shoot's Extensions in the seed that holds
// them and waits until they are gone: for the firewall, until the extension
// has released the machine.
func (d *demo) deleteExtensions(ctx context.Context, s *seed) error {
	var deleted []string
	for _, ex := range []*extensionsv1alpha1.Extension{d.firewall, d.acl} {
		if ex == nil {
			continue
		}
		obj := &extensionsv1alpha1.Extension{}
		obj.Name, obj.Namespace = ex.Name, ex.Namespace
		if err := s.c.Delete(ctx, obj); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		if err := d.n.waitFor(ctx, "the deletion of Extension "+ex.Name+" in "+s.name, 2*time.Minute, func(ctx context.Context) error {
			err := s.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return err
			case obj.Status.LastError != nil:
				return errors.New(obj.Status.LastError.Description)
			default:
				return errors.New("still there")
			}
		}); err != nil {
			return err
		}
		deleted = append(deleted, ex.Name)
	}
	if len(deleted) == 0 {
		return nil
	}
	released, err := d.site.released(ctx)
	if err != nil {
		return err
	}
	what := "Extension " + deleted[0]
	if len(deleted) > 1 {
		what = "Extensions " + strings.Join(deleted, " and ")
	}
	d.n.say("Deleted %s in %s%s", what, s.name, released)
	return nil
}
