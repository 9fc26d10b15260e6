package app_test

import (
	"github.com/metal-firewall/gardener-extension-firewall/cmd/gardener-extension-firewall/app"
	"github.com/metal-firewall/gardener-extension-firewall/test/cmdtest"
)

var _ = cmdtest.DescribeVersionFlag("gardener-extension-firewall", &app.Version, app.NewCommand)
