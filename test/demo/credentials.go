package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/test/framework"
)

// showCredential checks how the agent authenticates at the seed: the seed
// kubeconfig it wrote on the machine holds a client certificate that the
// seed's client CA signed for this firewall, with the key beside it, no
// token; and the certificate is the one issued for a CSR in the seed that
// the firewall's boot token requested and the extension approved.
func (d *demo) showCredential(ctx context.Context, s *seed, fwName string) error {
	path := agentconfigv1alpha1.SeedKubeconfigPath
	data, mode, err := d.site.readFile(ctx, path)
	if err != nil {
		return err
	}
	if mode != 0o600 {
		return fmt.Errorf("%s has mode %o, want 0600", path, mode)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil || cfg.AuthInfos[kctx.AuthInfo] == nil {
		return fmt.Errorf("%s has no complete current context", path)
	}
	if server := cfg.Clusters[kctx.Cluster].Server; server != s.cp.Config.Host {
		return fmt.Errorf("%s names server %s, not %s (%s)", path, server, s.cp.Config.Host, s.name)
	}
	auth := cfg.AuthInfos[kctx.AuthInfo]
	if auth.Token != "" || auth.TokenFile != "" || auth.Username != "" {
		return fmt.Errorf("%s holds a token or password", path)
	}
	if _, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData); err != nil {
		return fmt.Errorf("%s: certificate and key do not belong together: %w", path, err)
	}
	cert, err := parseCertificate(auth.ClientCertificateData)
	if err != nil {
		return err
	}
	wantCN := firewallv1alpha1.AgentUserName(shootNamespace, fwName)
	if cert.Subject.CommonName != wantCN {
		return fmt.Errorf("certificate CN %q, want %q", cert.Subject.CommonName, wantCN)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.cp.CACertificate())
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("the certificate is not one of %s's client CA: %w", s.name, err)
	}

	csr, err := csrIssuing(ctx, s.c, cert)
	if err != nil {
		return err
	}
	approved := approval(csr)
	if approved == nil {
		return fmt.Errorf("CSR %s issued a certificate but is not approved", csr.Name)
	}
	if !strings.HasPrefix(csr.Spec.Username, "system:serviceaccount:"+framework.BootNamespace+":firewall-boot.") {
		return fmt.Errorf("CSR %s was requested by %s, not by the firewall's boot ServiceAccount", csr.Name, csr.Spec.Username)
	}
	d.n.say("CSR %s in %s: requested by %s (the firewall's boot token) for CN=%s, signer %s; %s by the extension's approver (%s), which pinned the agent's key on the Firewall; the certificate issued by kube-controller-manager",
		csr.Name, s.name, csr.Spec.Username, wantCN, csr.Spec.SignerName, approved.Type, approved.Message)
	d.n.say("The agent's seed kubeconfig on the machine (%s, mode 0600) holds that certificate (valid until %s, verified against %s's client CA) and the key the agent generated; no token",
		path, cert.NotAfter.Format(time.DateTime), s.name)
	return nil
}

// csrIssuing finds the seed's CSR whose issued certificate is cert.
func csrIssuing(ctx context.Context, c client.Client, cert *x509.Certificate) (*certificatesv1.CertificateSigningRequest, error) {
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		issued, err := parseCertificate(list.Items[i].Status.Certificate)
		if err == nil && bytes.Equal(issued.Raw, cert.Raw) {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no CSR in the seed issued the agent's certificate (serial %s)", cert.SerialNumber)
}

func approval(csr *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequestCondition {
	for i, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}

func parseCertificate(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// showBootCredentialGone checks that the seed deleted the firewall's boot
// ServiceAccount once the agent reported in, so that the boot kubeconfig
// still on the machine no longer authenticates.
func (d *demo) showBootCredentialGone(ctx context.Context, s *seed) error {
	if err := d.n.waitFor(ctx, "the boot ServiceAccount's deletion in "+s.name, time.Minute, func(ctx context.Context) error {
		sas, err := framework.BootServiceAccounts(ctx, s.c, shootNamespace)
		if err != nil {
			return err
		}
		if len(sas) > 0 {
			return fmt.Errorf("%d boot ServiceAccounts left", len(sas))
		}
		return nil
	}); err != nil {
		return err
	}
	path := agentconfigv1alpha1.BootstrapKubeconfigPath
	kubeconfig, err := d.site.bootKubeconfig(ctx)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	// kube-apiserver caches token authentications for a few seconds.
	var status apierrors.APIStatus
	if err := d.n.waitFor(ctx, "the boot token's refusal by "+s.name, 30*time.Second, func(ctx context.Context) error {
		err := c.List(ctx, &corev1.NamespaceList{})
		switch {
		case err == nil:
			return errors.New("the boot kubeconfig on the machine still authenticates")
		case !apierrors.IsUnauthorized(err) || !errors.As(err, &status):
			return fmt.Errorf("the boot kubeconfig on the machine must be refused with 401 Unauthorized: %w", err)
		}
		return nil
	}); err != nil {
		return err
	}
	d.n.say("The boot ServiceAccount is deleted from %s: the boot kubeconfig left on the machine (%s) now gets %d %s",
		s.name, path, status.Status().Code, status.Status().Reason)
	return nil
}

// showBootCredential checks what a new machine holds: a boot kubeconfig
// whose token is its own ServiceAccount's, short-lived and without the group
// system:bootstrappers, and no seed kubeconfig yet.
func (d *demo) showBootCredential(ctx context.Context, s *seed) error {
	// A machine that booted by itself may have connected already.
	if !d.site.agentStartsAlone() {
		if _, _, err := d.site.readFile(ctx, agentconfigv1alpha1.SeedKubeconfigPath); err == nil {
			return fmt.Errorf("a new machine must not hold %s yet", agentconfigv1alpha1.SeedKubeconfigPath)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	kubeconfig, err := d.site.bootKubeconfig(ctx)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	if cfg.Host != s.cp.Config.Host {
		return fmt.Errorf("%s names %s, not %s", agentconfigv1alpha1.BootstrapKubeconfigPath, cfg.Host, s.name)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("the boot kubeconfig does not authenticate at %s: %w", s.name, err)
	}
	user := review.Status.UserInfo
	if !strings.HasPrefix(user.Username, "system:serviceaccount:"+framework.BootNamespace+":") || slices.Contains(user.Groups, "system:bootstrappers") {
		return fmt.Errorf("the boot token is %s %v, not a boot ServiceAccount's", user.Username, user.Groups)
	}
	expires, err := tokenExpiry(cfg.BearerToken)
	if err != nil {
		return err
	}
	d.n.say("Its only credential is %s: a token of its own ServiceAccount %s at %s (groups %s; not system:bootstrappers, which a Gardener seed lets become a node), expiring at %s (in %.0f min)",
		agentconfigv1alpha1.BootstrapKubeconfigPath, strings.TrimPrefix(user.Username, "system:serviceaccount:"), s.name, strings.Join(user.Groups, ", "),
		expires.Local().Format(time.TimeOnly), time.Until(expires).Minutes())
	return nil
}

// tokenExpiry reads the exp claim of a ServiceAccount token (a JWT).
func tokenExpiry(token string) (time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("the boot token is no JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, err
	}
	claims := struct {
		Exp int64 `json:"exp"`
	}{}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return time.Time{}, err
	}
	return time.Unix(claims.Exp, 0), nil
}

// showSeedRefuses checks that a seed no longer lets the agent in with the
// certificate it holds.
func (d *demo) showSeedRefuses(ctx context.Context, s *seed, fwName string) error {
	data, _, err := d.site.readFile(ctx, agentconfigv1alpha1.SeedKubeconfigPath)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return err
	}
	if cfg.Host != s.cp.Config.Host {
		return fmt.Errorf("the agent's seed kubeconfig names %s, not %s", cfg.Host, s.name)
	}
	c, err := client.New(cfg, client.Options{Scheme: framework.SeedScheme})
	if err != nil {
		return err
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: shootNamespace, Name: fwName}, &firewallv1alpha1.Firewall{})
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return fmt.Errorf("%s still lets the agent read its Firewall", s.name)
	case !apierrors.IsForbidden(err) || !errors.As(err, &status):
		return fmt.Errorf("%s must refuse the agent's certificate with 403 Forbidden: %w", s.name, err)
	}
	d.n.say("The agent's certificate no longer works at %s: reading its Firewall with it gets %d %s", s.name, status.Status().Code, status.Status().Reason)
	return nil
}
