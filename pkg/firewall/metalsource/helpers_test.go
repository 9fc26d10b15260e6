package metalsource_test

import (
	"context"
	"encoding/base64"

	"github.com/metal-stack/metal-go/api/client/firewall"
	"github.com/metal-stack/metal-go/api/models"
	"k8s.io/utils/ptr"

	"github.com/metal-firewall/gardener-extension-firewall/test/metalapi"
)

func metalapiAllocate(ctx context.Context, name string, rules *models.V1FirewallRules) *firewall.AllocateFirewallParams {
	return firewall.NewAllocateFirewallParamsWithContext(ctx).WithBody(&models.V1FirewallCreateRequest{
		Name: name, Hostname: name,
		Sizeid: ptr.To(metalapi.Size), Imageid: ptr.To(metalapi.Image), Partitionid: ptr.To("partition-a"), Projectid: ptr.To(project), SSHPubKeys: []string{},
		Networks: []*models.V1MachineAllocationNetwork{
			{Networkid: ptr.To(metalapi.PrivateNetwork(project)), Autoacquire: ptr.To(true)},
			{Networkid: ptr.To(metalapi.Internet), Autoacquire: ptr.To(true)},
		},
		FirewallRules: rules,
		UserData:      base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.5.0"}}`)),
	})
}
