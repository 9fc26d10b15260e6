// Package seedhosted tells whether a shoot's control plane runs in a seed:
// both extension types need one, and since Gardener v1.147 a Cluster may
// have none (self-hosted shoots, GEP-28).
package seedhosted

import (
	"fmt"

	extensionscontroller "github.com/gardener/gardener/extensions/pkg/controller"
	v1beta1helper "github.com/gardener/gardener/pkg/api/core/v1beta1/helper"
	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
)

// Check returns nil when the Cluster names a seed, else an error that names
// the Cluster and says what the extension type needs the seed for, coded as
// a configuration problem: no retry makes a seed appear.
func Check(cluster *extensionscontroller.Cluster, needs string) error {
	if cluster == nil || cluster.Seed != nil {
		return nil
	}
	what := "names no seed"
	if cluster.Shoot != nil && v1beta1helper.IsShootSelfHosted(cluster.Shoot.Spec.Provider.Workers) {
		what = "is of a self-hosted shoot (a worker pool runs its control plane) and names no seed"
	}
	return v1beta1helper.NewErrorWithCodes(fmt.Errorf("cluster %s %s: %s", cluster.ObjectMeta.Name, what, needs),
		gardencorev1beta1.ErrorConfigurationProblem)
}
