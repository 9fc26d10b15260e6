// Command gardener-extension-firewall-admission runs in the garden and
// refuses Shoots with an invalid `firewall` or `acl` providerConfig.
package main

import (
	"os"

	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall-admission/app"
)

func main() {
	os.Exit(app.Main())
}
