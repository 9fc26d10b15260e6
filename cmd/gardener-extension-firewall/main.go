// Command gardener-extension-firewall runs in the seed: the Extension
// controllers for the types `firewall` and `acl`, the firewall manager
// (FirewallDeployment -> FirewallSet -> Firewall), the agents' CSR approver
// and the EnvoyFilter webhook.
package main

import (
	"os"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
)

func main() {
	os.Exit(app.Main())
}
