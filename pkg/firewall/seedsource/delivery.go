package seedsource

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	fwv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

// deliveryState is what the agent keeps of deliveries: the delivery key
// pinned from its seed (PKIX DER) and the generation of the last delivery it
// took.
type deliveryState struct {
	Key        []byte `json:"key"`
	Generation int64  `json:"generation"`
}

func (s *Source) deliveryStatePath() string {
	return agentconfigv1alpha1.DeliveryStateOf(&s.Config)
}

func (s *Source) readDeliveryState() (deliveryState, error) {
	st := deliveryState{}
	data, err := os.ReadFile(s.deliveryStatePath())
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w", s.deliveryStatePath(), err)
	}
	return st, nil
}

func (s *Source) writeDeliveryState(st deliveryState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.Write(s.deliveryStatePath(), data, 0o600)
}

// pinDeliveryKey keeps the delivery key that the seed names on the Firewall,
// read with the agent's own credential: only what it signs is taken from the
// shoot later.
func (s *Source) pinDeliveryKey(fw *fwv1alpha1.Firewall) {
	encoded := fw.Annotations[fwv1alpha1.AnnotationDeliveryKey]
	if encoded == "" || s.deliveryStatePath() == "" {
		return
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		s.Log.Error("the Firewall's delivery key is no base64; keeping the one pinned", "annotation", fwv1alpha1.AnnotationDeliveryKey)
		return
	}
	st, err := s.readDeliveryState()
	if err != nil {
		s.Log.Error("reading the delivery state", "error", err)
		return
	}
	if bytes.Equal(st.Key, key) {
		return
	}
	st.Key = key
	if err := s.writeDeliveryState(st); err != nil {
		s.Log.Error("pinning the delivery key", "error", err)
		return
	}
	s.Log.Info("pinned the seed's delivery key", "keyID", seal.KeyID(key))
}

// ErrNothingNew says that the delivered box is the one the agent took last.
var ErrNothingNew = errors.New("the delivery was taken before")

// ErrRefused wraps why a delivered box is refused; other errors of
// TakeDelivered are of a box it would take but could not use.
var ErrRefused = errors.New("refused")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// TakeDelivered takes a bootstrap kubeconfig delivered through the shoot
// (after a control plane migration): signed with the pinned delivery key, for
// this firewall, of a generation above the last one taken, not expired, and
// sealed to this agent's key. Only once the agent holds a certificate of the
// seed it names are the bootstrap kubeconfig and the generation written: a
// box it refuses, or whose seed does not answer, changes nothing on disk.
func (s *Source) TakeDelivered(ctx context.Context, box []byte) error {
	st, err := s.readDeliveryState()
	if err != nil {
		return err
	}
	if len(st.Key) == 0 {
		return refused("no delivery key pinned (the agent never read its Firewall with one from its seed)")
	}
	d, err := seal.Verify(st.Key, s.Config.Namespace, s.Name, box)
	if err != nil {
		return refused("%w", err)
	}
	switch {
	case d.Generation == st.Generation:
		return ErrNothingNew
	case d.Generation < st.Generation:
		return refused("generation %d is below the last one taken, %d (a replayed delivery)", d.Generation, st.Generation)
	case !s.now().Before(d.Expires):
		return refused("the delivered credential expired at %s", d.Expires.UTC().Format("2006-01-02T15:04:05Z"))
	}
	key, err := s.identityKey()
	if err != nil {
		return err
	}
	kubeconfig, err := seal.Open(key, s.Config.Namespace, s.Name, d.Sealed)
	if err != nil {
		return refused("%w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return refused("the delivered bootstrap kubeconfig: %w", err)
	}
	s.Log.Info("a new bootstrap kubeconfig arrived through the shoot; bootstrapping with it", "server", cfg.Host, "generation", d.Generation)
	s.client = nil
	if err := s.request(ctx, cfg); err != nil {
		return fmt.Errorf("bootstrapping with the delivered kubeconfig at %s: %w", cfg.Host, err)
	}
	if err := atomicfile.Write(s.Config.BootstrapKubeconfig, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the delivered bootstrap kubeconfig to %s: %w", s.Config.BootstrapKubeconfig, err)
	}
	st.Generation = d.Generation
	return s.writeDeliveryState(st)
}
