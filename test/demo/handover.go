package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/seal"
)

// handOver records every bootstrap kubeconfig a seed delivers to a
// firewall's agent through the shoot. The extension withdraws the Secret as
// soon as the agent has reported in, so it is watched, not looked up later.
type handOver struct {
	mu        sync.Mutex
	delivered [][]byte
	stop      func()
}

// watchHandOver starts recording the deliveries to firewall fwName.
func (d *demo) watchHandOver(ctx context.Context, fwName string) (*handOver, error) {
	w, err := d.shootClient.Watch(ctx, &corev1.SecretList{}, client.InNamespace(constants.ShootNamespace))
	if err != nil {
		return nil, err
	}
	h := &handOver{stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if !ok || s.Name != firewallv1alpha1.DeliveredBootstrapSecretName(fwName) {
				continue
			}
			if data := s.Data[firewallv1alpha1.DeliveredBootstrapKey]; len(data) > 0 {
				h.mu.Lock()
				h.delivered = append(h.delivered, data)
				h.mu.Unlock()
			}
		}
	}()
	return h, nil
}

// carried tells whether kubeconfig is what one of the boxes that came
// through the shoot holds, signed with the delivery key the agent pinned
// (PKIX DER) and sealed to the machine's key, and how many there were.
func (h *handOver) carried(key *ecdsa.PrivateKey, deliveryKey []byte, fwName string, kubeconfig []byte) (bool, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, data := range h.delivered {
		d, err := seal.Verify(deliveryKey, shootNamespace, fwName, data)
		if err != nil {
			continue
		}
		if opened, err := seal.Open(key, shootNamespace, fwName, d.Sealed); err == nil && bytes.Equal(opened, kubeconfig) {
			return true, len(h.delivered)
		}
	}
	return false, len(h.delivered)
}

// boxes are the delivered values as the shoot's admins read them.
func (h *handOver) boxes() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.delivered)
}
