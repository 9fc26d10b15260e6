package imagebuild

// NonRootUID is the user (and group) the images run as: distroless' "nonroot",
// so that tooling and policies that know that convention recognise it.
const NonRootUID = 65532

// BaseFiles are what a static binary needs beside itself: /etc/passwd and
// /etc/group give UID 65532 a name and a home (os/user, $HOME set by the
// runtime), and /tmp is world-writable with the sticky bit.
func BaseFiles() []File {
	return []File{
		{Path: "etc", Mode: 0o755, Dir: true},
		{Path: "etc/group", Mode: 0o644, Content: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: "etc/passwd", Mode: 0o644, Content: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "home", Mode: 0o755, Dir: true},
		{Path: "home/nonroot", Mode: 0o700, Dir: true, UID: NonRootUID, GID: NonRootUID},
		{Path: "root", Mode: 0o700, Dir: true},
		{Path: "tmp", Mode: 0o1777, Dir: true},
	}
}
