package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/constants"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/bootstrap"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// migrate moves the shoot's control plane from seed A to seed B as
// gardenlet does, and checks that the firewall went along: one machine, the
// connection kept, the agent connected to seed B on its own.
func (d *demo) migrate(ctx context.Context) error {
	fws, err := framework.Firewalls(ctx, d.seedA.c, shootNamespace)
	if err != nil {
		return err
	}
	if len(fws) != 1 {
		return fmt.Errorf("%d Firewalls in seed A, want 1", len(fws))
	}
	fwName := fws[0].Name

	if err := d.showShootKubeconfig(ctx); err != nil {
		return err
	}

	d.seedB = &seed{name: "seed B"}
	if err := d.startSeed(ctx, d.seedB, "seed-b"); err != nil {
		return err
	}
	how, err := d.site.reach(ctx, d.seedB.cp.Config.Host)
	if err != nil {
		return err
	}
	if how == "" {
		how = "over its internet, as it reaches seed A's"
	}
	d.n.say("The machine can reach seed B's API endpoint as well %s", how)

	d.n.say("Migrating out of seed A as gardenlet does: gardener.cloud/operation=migrate on both Extensions, then a shallow delete")
	fwState, err := framework.Migrate(ctx, d.seedA.c, d.firewall, time.Minute)
	if err != nil {
		return err
	}
	d.owner = nil
	aclState, err := framework.Migrate(ctx, d.seedA.c, d.acl, time.Minute)
	if err != nil {
		return err
	}
	if err := d.checkMigratedOut(ctx, fwName, fwState); err != nil {
		return err
	}
	d.n.say("Seed A: Migrate Succeeded for both; the firewall Extension's state holds Firewall %s with machine %s; seed A holds no Firewall, no boot ServiceAccount, no RBAC for the agent, no acl EnvoyFilter",
		fwName, d.machineID)
	if err := d.showSeedRefuses(ctx, d.seedA, fwName); err != nil {
		return err
	}

	if err := d.kept.Echo("between migrate and restore"); err != nil {
		return fmt.Errorf("the connection opened before, between migrate and restore: %w", err)
	}
	if err := d.droppedFromOutside(ctx); err != nil {
		return err
	}
	d.n.say("Between the seeds, the machine keeps forwarding with its last rules: the kept connection carries data, a new one from outside is dropped")

	handOver, err := d.watchHandOver(ctx, fwName)
	if err != nil {
		return err
	}
	defer handOver.stop()

	d.n.say("Restoring in seed B as gardenlet does: the Extensions created with wait-for-state, their saved state written, then gardener.cloud/operation=restore")
	d.owner = d.seedB
	// The firewall's restore is reported done only once its agent has reached
	// seed B and reports its rules in force there.
	restoring := time.Now()
	if d.firewall, err = framework.Restore(ctx, d.seedB.c, d.firewall, fwState, 3*time.Minute); err != nil {
		return err
	}
	if d.acl, err = framework.Restore(ctx, d.seedB.c, d.acl, aclState, time.Minute); err != nil {
		return err
	}
	d.n.say("Seed B: firewall %s, acl %s", framework.LastOperation(d.firewall), framework.LastOperation(d.acl))

	d.n.say("Waiting for the agent to notice that seed A refuses it and to find seed B by itself")
	fw, err := d.waitForConnected(ctx, d.seedB, 3*time.Minute)
	if err != nil {
		return err
	}
	took := time.Since(restoring)
	if fw.Name != fwName || fw.Status.MachineStatus == nil || fw.Status.MachineStatus.MachineID != d.machineID {
		return fmt.Errorf("seed B's Firewall %s runs on %v, want %s on machine %s", fw.Name, fw.Status.MachineStatus, fwName, d.machineID)
	}
	// The report's time has seconds only.
	if !fw.Status.AgentStatus.LastRunAgainstSeed.After(restoring.Add(-time.Second)) {
		return fmt.Errorf("the agent's last report into seed B (%s) is older than the restore", fw.Status.AgentStatus.LastRunAgainstSeed)
	}
	d.n.say("The agent connected to seed B %.1f s after the restore began: Firewall %s Ready in seed B, on the same machine %s", took.Seconds(), fw.Name, d.machineID)
	if err := d.showHandOver(ctx, fw.Name, handOver); err != nil {
		return err
	}
	if err := d.showCredential(ctx, d.seedB, fw.Name); err != nil {
		return err
	}
	if err := d.showBootCredentialGone(ctx, d.seedB); err != nil {
		return err
	}
	if err := d.showOneMachine(); err != nil {
		return err
	}
	if err := d.kept.Echo("after the migration"); err != nil {
		return fmt.Errorf("the connection opened before the migration: %w", err)
	}
	if err := d.droppedFromOutside(ctx); err != nil {
		return err
	}
	d.n.say("The node's connection to %s, opened before the migration, still carries data; a new connection from outside is still dropped", d.outsideAddr())
	if err := d.showACL(ctx, d.seedB); err != nil {
		return err
	}
	d.n.proved(fmt.Sprintf("the control plane moved from seed A to seed B with one firewall machine throughout, the TCP connection opened before kept carrying data, and the agent reconnected to seed B by itself, %.1f s after the restore began", took.Seconds()))
	d.n.proved("the acl EnvoyFilters moved along: withdrawn in seed A, generated again in seed B")
	return nil
}

// showShootKubeconfig waits until the agent keeps a shoot kubeconfig, its
// way to a new seed after a migration: through the seed it reads the
// shoot-access Secret whose token Gardener's TokenRequestor fills.
func (d *demo) showShootKubeconfig(ctx context.Context) error {
	path := agentconfigv1alpha1.ShootKubeconfigPath
	var mode os.FileMode
	if err := d.n.waitFor(ctx, "the agent's shoot kubeconfig", time.Minute, func(ctx context.Context) error {
		data, m, err := d.site.readFile(ctx, path)
		if err != nil {
			return err
		}
		mode = m
		cfg, err := clientcmd.Load(data)
		if err != nil {
			return err
		}
		kctx := cfg.Contexts[cfg.CurrentContext]
		if kctx == nil || cfg.Clusters[kctx.Cluster] == nil || cfg.AuthInfos[kctx.AuthInfo] == nil || cfg.AuthInfos[kctx.AuthInfo].Token == "" {
			return fmt.Errorf("%s has no token yet", path)
		}
		if server := cfg.Clusters[kctx.Cluster].Server; server != d.shoot.Config.Host {
			return fmt.Errorf("%s names %s, not the shoot", path, server)
		}
		return nil
	}); err != nil {
		return err
	}
	if mode != 0o600 {
		return fmt.Errorf("%s has mode %o, want 0600", path, mode)
	}
	d.n.say("The agent keeps a shoot kubeconfig (%s, mode 0600) with a short-lived token from Gardener's TokenRequestor: its way to a new seed after a migration", path)
	return nil
}

// checkMigratedOut checks seed A after Migrate: the state names the
// firewall and its machine; nothing of the shoot's firewall or ACL is left.
func (d *demo) checkMigratedOut(ctx context.Context, fwName string, state *runtime.RawExtension) error {
	if state == nil || !strings.Contains(string(state.Raw), fwName) || !strings.Contains(string(state.Raw), d.machineID) {
		return fmt.Errorf("the firewall Extension's state does not name Firewall %s and machine %s", fwName, d.machineID)
	}
	c := d.seedA.c
	fws, err := framework.Firewalls(ctx, c, shootNamespace)
	if err != nil {
		return err
	}
	sas, err := framework.BootServiceAccounts(ctx, c, shootNamespace)
	if err != nil {
		return err
	}
	if len(fws) != 0 || len(sas) != 0 {
		return fmt.Errorf("seed A still holds %d Firewalls and %d boot ServiceAccounts", len(fws), len(sas))
	}
	// The shared HTTP-CONNECT filter stays for other shoots, without this one.
	shared, err := framework.ACLSharedObjects(ctx, c, framework.IngressNamespace)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for _, ef := range envoyFilters(shared) {
		content, err := json.Marshal(ef)
		if err != nil {
			return err
		}
		if strings.Contains(string(content), shootNamespace) {
			return fmt.Errorf("seed A's EnvoyFilter %s/%s still names the shoot", ef.Namespace, ef.Name)
		}
	}
	for _, o := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: firewallv1alpha1.AgentUserName(shootNamespace, fwName)}},
		{&resourcesv1alpha1.ManagedResource{}, client.ObjectKey{Namespace: shootNamespace, Name: constants.ACLManagedResourceName}},
	} {
		err := c.Get(ctx, o.key, o.obj)
		switch {
		case err == nil:
			return fmt.Errorf("seed A still holds %T %s", o.obj, o.key)
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	return nil
}

// showHandOver checks how the agent found seed B: the bootstrap kubeconfig
// on the machine is one that seed B's extension delivered through the
// shoot, the one API endpoint that a migration does not change; and the
// Secret is withdrawn once the agent has reported in.
func (d *demo) showHandOver(ctx context.Context, fwName string, h *handOver) error {
	path := agentconfigv1alpha1.BootstrapKubeconfigPath
	data, _, err := d.site.readFile(ctx, path)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return err
	}
	if cfg.Host != d.seedB.cp.Config.Host {
		return fmt.Errorf("the machine's bootstrap kubeconfig names %s, not seed B (%s)", cfg.Host, d.seedB.cp.Config.Host)
	}
	key := client.ObjectKey{Namespace: constants.ShootNamespace, Name: firewallv1alpha1.DeliveredBootstrapSecretName(fwName)}
	keyPEM, _, err := d.site.readFile(ctx, agentconfigv1alpha1.IdentityKeyPath)
	if err != nil {
		return err
	}
	machineKey, err := bootstrap.DecodeKey(keyPEM)
	if err != nil {
		return err
	}
	stateJSON, _, err := d.site.readFile(ctx, agentconfigv1alpha1.DeliveryStatePath)
	if err != nil {
		return err
	}
	pinned := struct{ Key []byte }{}
	if err := json.Unmarshal(stateJSON, &pinned); err != nil {
		return fmt.Errorf("%s: %w", agentconfigv1alpha1.DeliveryStatePath, err)
	}
	carried, deliveries := h.carried(machineKey, pinned.Key, fwName, data)
	if !carried {
		return fmt.Errorf("the machine's bootstrap kubeconfig is in none of the %d boxes delivered in the shoot's Secret %s that are signed with the delivery key the agent pinned and sealed to its key", deliveries, key)
	}
	// What the shoot's admins could read: a box that authenticates nowhere.
	for _, box := range h.boxes() {
		if cfg, err := clientcmd.RESTConfigFromKubeConfig(box); err == nil && cfg.Host != "" {
			return fmt.Errorf("the shoot's Secret %s holds a readable kubeconfig", key)
		}
		if bytes.Contains(box, []byte(cfg.BearerToken)) {
			return fmt.Errorf("the shoot's Secret %s holds the boot token in clear", key)
		}
	}
	if err := d.n.waitFor(ctx, "the hand-over Secret's withdrawal from the shoot", time.Minute, func(ctx context.Context) error {
		err := d.shootClient.Get(ctx, key, &corev1.Secret{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("secret %s is still in the shoot", key)
	}); err != nil {
		return err
	}
	d.n.say("How: seed B's extension sealed a bootstrap kubeconfig for seed B to the machine's key (pinned by seed A's CSR approver), signed it with the Firewall's delivery key (the agent pinned its public half from seed A; the private half came in the migration state) and wrote it into the shoot's Secret %s; the shoot's admins read only an HPKE box there and cannot write one the agent takes; the agent checked the signature, opened the box with its key and wrote it to %s; the Secret is withdrawn again",
		key, path)
	return nil
}

// showOneMachine checks that there was never a second firewall machine.
func (d *demo) showOneMachine() error {
	said, err := d.site.oneMachine()
	if err != nil {
		return err
	}
	d.n.say("One machine throughout: %s", said)
	return nil
}
