package agent

import (
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/lastgood"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/nftables"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// saveLastGood saves rs, which the kernel just accepted, for the boot step.
// A failure is logged and the apply stands: the rules are in force, and the
// boot step falls back to an older ruleset or to the closed table.
func (a *Agent) saveLastGood(rs *ruleset.Ruleset, res nftables.Result) {
	if a.LastGoodPath == "" || a.saved && res.Mode == nftables.Unchanged {
		return
	}
	if err := lastgood.Save(a.LastGoodPath, rs); err != nil {
		a.Log.Error("saving the last good ruleset for the next boot failed; the ruleset is in force", "error", err)
		return
	}
	a.saved = true
}

// startTable makes sure, at start, that the kernel holds the agent's table,
// and tells whether it holds nothing worth keeping until the sources answer
// (the first boot of a machine, or the closed table). When the kernel holds
// no table, the boot step is done now (for machines without it), so that
// forwarding is not open while the sources are read.
func (a *Agent) startTable() (firstBoot bool) {
	t, ok := a.Applier.(tableChecker)
	if !ok {
		return false
	}
	exists, err := t.TableExists(ruleset.TableName)
	if err != nil {
		return false
	}
	if !exists {
		if a.LastGoodPath == "" {
			return true
		}
		k, ok := a.Applier.(BootApplier)
		if !ok {
			return true
		}
		outcome, err := Boot(k, a.LastGoodPath, a.Log)
		return err != nil || outcome == BootClosed
	}
	if c, ok := a.Applier.(chainChecker); ok {
		closed, err := c.ChainExists(ruleset.TableName, ruleset.ClosedChain)
		return err == nil && closed
	}
	return false
}
