package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/lastgood"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
)

// BootOutcome says what Boot found or installed.
type BootOutcome string

const (
	// BootKept: the kernel already held the agent's table, which is at
	// least as recent as the saved ruleset; nothing was changed.
	BootKept BootOutcome = "kept"
	// BootLastGood: the last good ruleset was installed.
	BootLastGood BootOutcome = "last-good"
	// BootClosed: no last good ruleset could be installed; the closed table
	// drops everything forwarded until the agent applies.
	BootClosed BootOutcome = "closed"
)

// BootApplier is what Boot needs of the kernel; *nftables.Programmer is one.
type BootApplier interface {
	Applier
	tableChecker
	chainChecker
}

// Boot makes sure the kernel holds the agent's table before any network is
// up: the last good ruleset saved at path, or, when there is none or it
// cannot be read or applied, the closed table. Each is one batch, so there
// is never a moment without a table. An error means not even the closed
// table could be installed.
func Boot(k BootApplier, path string, log *slog.Logger) (BootOutcome, error) {
	exists, err := k.TableExists(ruleset.TableName)
	if err != nil {
		return "", fmt.Errorf("boot: %w", err)
	}
	if exists {
		// The closed table, as nftables.service loads it from disk, is no
		// ruleset to keep: the last good one replaces it, in one batch.
		closed, err := k.ChainExists(ruleset.TableName, ruleset.ClosedChain)
		if err != nil {
			return "", fmt.Errorf("boot: %w", err)
		}
		exists = !closed
	}
	if exists {
		log.Info("boot: the kernel holds the agent's table already; keeping it")
		if rs, err := lastgood.Load(path); err == nil {
			if err := openImageTable(k, rs, log); err != nil {
				log.Error("boot: "+err.Error(), "path", path)
			}
		}
		return BootKept, nil
	}
	rs, err := lastgood.Load(path)
	if err == nil {
		if _, err = k.Apply(rs); err == nil {
			log.Info("boot: last good ruleset installed", "path", path)
			// The image's table is opened only to a ruleset of the agent's
			// own, never while the closed table is all there is.
			if err := openImageTable(k, rs, log); err != nil {
				log.Error("boot: "+err.Error(), "path", path)
			}
			return BootLastGood, nil
		}
		err = fmt.Errorf("applying it: %w", err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("boot: no last good ruleset; forwarding is closed until the agent applies", "path", path)
	} else {
		log.Error("boot: last good ruleset not usable; forwarding is closed until the agent applies", "path", path, "error", err)
	}
	if _, err := k.Apply(ruleset.Closed()); err != nil {
		return "", fmt.Errorf("boot: installing the closed table: %w", err)
	}
	return BootClosed, nil
}
