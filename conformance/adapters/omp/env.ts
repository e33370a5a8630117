// Environment variables that make pi-utils or the library write elsewhere, or pick names that
// depend on the machine (terminal breadcrumbs). The adapter and the bench script delete them
// before the library is imported (pi-utils reads them at import time).
export const SCRUB_ENV = [
	"PI_CODING_AGENT_DIR",
	"PI_CONFIG_DIR",
	"OMP_PROFILE",
	"PI_PROFILE",
	"XDG_DATA_HOME",
	"XDG_STATE_HOME",
	"XDG_CACHE_HOME",
	"TMUX_PANE",
	"KITTY_WINDOW_ID",
	"TERM_SESSION_ID",
	"WT_SESSION",
	"ZELLIJ_PANE_ID",
	"ZELLIJ_SESSION_NAME",
	"CMUX_SURFACE_ID",
	"WEZTERM_PANE",
];
