package nftables

import "github.com/mdlayher/netlink/nltest"

// NewRecordingProgrammer returns a Programmer that talks to dial instead of
// the kernel: its ruleset connections and its generation queries alike.
func NewRecordingProgrammer(dial nltest.Func) *Programmer { return &Programmer{testDial: dial} }
