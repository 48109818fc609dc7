// Package ui is retrytop's dashboard: a bubbletea program that renders
// model.Frame values computed from a Source.
//
// The root Model composes sub-models that each own their Update and View
// (header, overview table with its SERVICES section, caller, group and
// service detail views, help). Replicas (targets sharing a layer) fold
// into one row per (layer, dependency), derived in the build Cmd with
// analysis.Aggregate; a group's detail lists its replicas, each one enter
// away. Data arrives as typed
// messages produced by tea.Cmds: a Cmd waits on the Source's update
// channel and another builds the next frame outside Update, so Update
// never blocks. Time comes from Options.Now and tea.Tick (the quiet-spell
// clock, the burst settle and the least gap between frames), never from a
// timer in the model; work that may be abandoned (the what-if pane's)
// runs under a context that leaving it cancels. Every key is a KeyMap
// binding, remappable, and the help and footers are generated from it.
// Rendering is hand-written into reusable byte buffers with styles
// precomputed from one Theme, and every panel caches its output until its
// inputs change, so a full 200x60 frame costs well under a millisecond and
// an idle dashboard renders nothing. Run draws a view on the terminal
// when it changes (termScreen), not on bubbletea's renderer's ticker, so
// nothing wakes up while nothing changes.
//
// All text that comes from a target (label values, error messages) passes
// through Sanitize before it reaches the terminal.
package ui
