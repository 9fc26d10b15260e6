package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// commands are what the provider runs on the host: ip (namespaces, veth),
// sysctl (forwarding), unshare, sh, hostname and chroot (the agent's start).
var commands = []string{"ip", "sysctl", "unshare", "sh", "hostname", "chroot"}

// CheckPrerequisites says in one error everything the local provider lacks
// on this host: root, the commands it runs, an executable agent binary.
func CheckPrerequisites(agentPath string) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (it creates network namespaces)")
	}
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, "the command "+c)
		}
	}
	switch st, err := os.Stat(agentPath); {
	case agentPath == "":
		missing = append(missing, "the firewall-agent binary (no path given)")
	case err != nil:
		missing = append(missing, fmt.Sprintf("the firewall-agent binary at %s (%v)", agentPath, errors.Unwrap(err)))
	case st.IsDir() || st.Mode().Perm()&0o111 == 0:
		missing = append(missing, fmt.Sprintf("an executable firewall-agent at %s", agentPath))
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the local machine provider needs %s; the extension image has none of this, use --machine-provider=metal or an image built for local machines", strings.Join(missing, ", "))
}
