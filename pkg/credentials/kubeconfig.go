package credentials

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BootstrapKubeconfig is the kubeconfig the agent bootstraps with: the seed's
// endpoint and CA, and the firewall's bootstrap token.
func BootstrapKubeconfig(server string, caPEM []byte, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["seed"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "seed", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	return clientcmd.Write(*cfg)
}
