package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version prints the module's version and the VCS revision the binary was
// built from, as the Go toolchain recorded them.
func version(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if _, err := parseFlags(newFlags("version"), args, 0, stdout); err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		_, err := fmt.Fprintln(stdout, "server: no build information (built without module support)")
		return err
	}
	_, err := io.WriteString(stdout, versionText(info))
	return err
}

// versionText describes a build: module path and version, VCS revision,
// its time and whether the tree was modified, and the Go version.
func versionText(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	revision := settings["vcs.revision"]
	if revision == "" {
		revision = "unknown (built without VCS information)"
	} else {
		var notes []string
		if t := settings["vcs.time"]; t != "" {
			notes = append(notes, t)
		}
		if settings["vcs.modified"] == "true" {
			notes = append(notes, "modified")
		}
		if len(notes) > 0 {
			revision += " (" + strings.Join(notes, ", ") + ")"
		}
	}
	module, ver := info.Main.Path, info.Main.Version
	if module == "" {
		module = "github.com/projectdata/projectdata"
	}
	if ver == "" {
		ver = "(devel)"
	}
	return fmt.Sprintf("server %s\nmodule   %s\nrevision %s\ngo       %s\n", ver, module, revision, info.GoVersion)
}
