// Package lastgood keeps the last ruleset the agent applied on disk, so that
// after a reboot the boot step can install it before any network comes up.
package lastgood
