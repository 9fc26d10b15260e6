package selfupdate

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/version"

	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
)

// States of the self-update, as AgentStatus.selfUpdate.state reports them.
const (
	StateDisabled   = "Disabled"
	StateUpToDate   = "UpToDate"
	StateUpdating   = "Updating"
	StateRefused    = "Refused"
	StateRolledBack = "RolledBack"
)

// Defaults of the Updater's bounds.
const (
	DefaultMaxBytes        = 256 << 20
	DefaultDownloadTimeout = 5 * time.Minute
	DefaultRetryInterval   = 10 * time.Minute
)

// Updater is the agent's self-update. Offer is called with the release the
// source names on every sync, Applied after every successful apply, Switch
// after the heartbeat; none of them blocks on the network.
type Updater struct {
	// Version is the running agent's version.
	Version string
	// Executable is the installed binary (StablePath of os.Executable).
	Executable string
	// Args are the agent's arguments, passed to a new version.
	Args []string
	// StatePath is the state file.
	StatePath string
	// Key is the operator's public key; nil turns the update off with
	// DisabledReason.
	Key            ed25519.PublicKey
	DisabledReason string
	AllowDowngrade bool
	HealthTimeout  time.Duration
	// MaxBytes, DownloadTimeout, RetryInterval: Default* when 0.
	MaxBytes        int64
	DownloadTimeout time.Duration
	RetryInterval   time.Duration
	// Client downloads; http.DefaultClient's transport when nil.
	Client *http.Client
	Log    *slog.Logger
	// Exec replaces the process (syscall.Exec); StartWatchdog starts the
	// watchdog of a trial and returns its pid. Tests fake both.
	Exec          func(path string, argv, env []string) error
	StartWatchdog func(statePath string, st *State) (int, error)
	// OnState, if set, is told every state (metrics).
	OnState func(state, wantedVersion string)

	mu      sync.Mutex
	status  fwv1alpha1.SelfUpdateStatus
	busy    bool
	staged  *Release
	refused map[Release]time.Time
	// trial is the state of this process's own trial, until it is installed.
	trial *State
	// failed is the release that was rolled back.
	failed *State
}

// Start reads the state file once, at the agent's start: whether this
// process is a version on trial, or a trial ended without this process
// (the new version crashed and was restarted as the old one).
func (u *Updater) Start() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.Key == nil {
		u.set(StateDisabled, "", u.DisabledReason)
		return
	}
	u.set(StateUpToDate, "", "")
	st, err := ReadState(u.StatePath)
	if err != nil {
		u.Log.Error("reading the self-update state; starting without it", "error", err)
		return
	}
	switch {
	case st == nil:
	case st.Phase == PhaseTrying && st.Version == u.Version && st.PID == os.Getpid():
		u.trial = st
		u.set(StateUpdating, st.Version, fmt.Sprintf("on trial until %s: installed once the ruleset is applied", st.Deadline.Format(time.RFC3339)))
		// Should the watchdog be gone, the trial still ends at its deadline.
		time.AfterFunc(time.Until(st.Deadline)+trialGrace, u.trialExpired)
		if st.WatchdogPID > 0 {
			// The watchdog is a child of this process (started before the re-exec): reap it.
			go func() { var ws waitStatus; _, _ = wait4(st.WatchdogPID, &ws) }()
		}
	case st.Phase == PhaseTrying:
		st.Phase, st.Message = PhaseFailed, fmt.Sprintf("rolled back: %s ended before it applied the ruleset (crashed, killed or restarted); %s runs", st.Version, u.Version)
		_ = os.Remove(st.Staged)
		if err := WriteState(u.StatePath, st); err != nil {
			u.Log.Error("recording the failed trial", "error", err)
		}
		u.failed = st
	case st.Phase == PhaseFailed:
		u.failed = st
	}
	if u.failed != nil {
		u.set(StateRolledBack, u.failed.Version, u.failed.Message)
	}
}

// Status is the self-update's state for the heartbeat.
func (u *Updater) Status() *fwv1alpha1.SelfUpdateStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.status
	return &s
}

func (u *Updater) set(state, wanted, message string) {
	if u.status.State != state || u.status.Message != message || u.status.WantedVersion != wanted {
		level := slog.LevelInfo
		if state == StateRefused || state == StateRolledBack || state == StateDisabled {
			level = slog.LevelError
		}
		u.Log.Log(context.Background(), level, "self-update", "state", state, "wanted", wanted, "running", u.Version, "message", message)
	}
	u.status = fwv1alpha1.SelfUpdateStatus{State: state, WantedVersion: wanted, Message: message}
	if u.OnState != nil {
		u.OnState(state, wanted)
	}
}

// Offer takes the release the source names (nil: none) and, when it is
// another version than the running one and may be run, downloads and
// verifies it in the background; Switch then runs it.
func (u *Updater) Offer(ctx context.Context, rel *Release) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.Key == nil:
		u.set(StateDisabled, versionOf(rel), u.DisabledReason)
		return
	case u.trial != nil || u.busy || (u.staged != nil && rel != nil && *u.staged == *rel):
		return
	case rel == nil || rel.Version == "":
		u.staged = nil
		u.set(StateUpToDate, "", "the source names no agent version")
		return
	case rel.Version == u.Version:
		u.staged = nil
		u.set(StateUpToDate, rel.Version, "")
		return
	case u.failed != nil && u.failed.Version == rel.Version && u.failed.SHA256 == rel.SHA256:
		u.set(StateRolledBack, rel.Version, u.failed.Message)
		return
	}
	u.staged = nil
	if err := u.check(*rel); err != nil {
		u.set(StateRefused, rel.Version, err.Error())
		return
	}
	if at, ok := u.refused[*rel]; ok && time.Since(at) < u.retryInterval() {
		return
	}
	u.busy = true
	u.set(StateUpdating, rel.Version, "downloading and verifying "+rel.URL)
	go u.fetch(ctx, *rel)
}

// check refuses what needs no download to refuse: a downgrade, a release
// without digest or URL.
func (u *Updater) check(rel Release) error {
	if rel.SHA256 == "" {
		return fmt.Errorf("the source names no sha256 for %s: a digest from the source is required, the download server is not trusted alone", rel.Version)
	}
	if rel.URL == "" {
		return fmt.Errorf("the source names no URL for %s", rel.Version)
	}
	want, err := version.ParseSemantic(rel.Version)
	if err != nil {
		return fmt.Errorf("the wanted version %q is not a semantic version: %w", rel.Version, err)
	}
	running, err := version.ParseSemantic(u.Version)
	if err != nil {
		// A development build has no place in the order: any release is an update.
		return nil
	}
	if want.LessThan(running) && !u.AllowDowngrade {
		return fmt.Errorf("refusing the downgrade from %s to %s (selfUpdate.allowDowngrade is off)", u.Version, rel.Version)
	}
	return nil
}

func (u *Updater) fetch(ctx context.Context, rel Release) {
	timeout := u.DownloadTimeout
	if timeout <= 0 {
		timeout = DefaultDownloadTimeout
	}
	maxBytes := u.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	client := u.Client
	if client == nil {
		client = &http.Client{}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := fetchVerified(ctx, client, rel, u.Key, maxBytes, u.Executable+StagedSuffix)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.busy = false
	if err != nil {
		if u.refused == nil {
			u.refused = map[Release]time.Time{}
		}
		u.refused[rel] = time.Now()
		u.set(StateRefused, rel.Version, err.Error())
		return
	}
	u.staged = &rel
	u.set(StateUpdating, rel.Version, "verified; switching to it")
}

func (u *Updater) retryInterval() time.Duration {
	if u.RetryInterval > 0 {
		return u.RetryInterval
	}
	return DefaultRetryInterval
}

func versionOf(rel *Release) string {
	if rel == nil {
		return ""
	}
	return rel.Version
}
