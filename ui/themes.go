package ui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// ThemeNames are the themes --theme selects: "terminal" (the default:
// the terminal's own 16 colours, so it follows a light or dark scheme),
// "dark" and "light" (fixed 256-colour palettes for a dark or a light
// background), and "rg-safe", which tells success from failure without
// red against green (the Okabe–Ito palette, readable with the common
// red–green colour blindness).
var ThemeNames = []string{"terminal", "dark", "light", "rg-safe"}

// ParseTheme returns the theme named name (any case; "" is the default).
func ParseTheme(name string) (Theme, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "terminal", "default":
		return DefaultTheme(), nil
	case "dark":
		return darkTheme(), nil
	case "light":
		return lightTheme(), nil
	case "rg-safe", "colorblind", "colourblind":
		return rgSafeTheme(), nil
	}
	return Theme{}, fmt.Errorf("unknown theme %q (want %s)", name, strings.Join(ThemeNames, ", "))
}

func c256(n string) lipgloss.Color { return lipgloss.Color(n) }

// darkTheme is bright colours on a dark background.
func darkTheme() Theme {
	return Theme{
		Text: c256("252"), Dim: c256("244"), Accent: c256("75"), Warn: c256("220"),
		Live: c256("78"), Paused: c256("220"), Replay: c256("80"), Down: c256("203"),
		Success: c256("78"), Rescued: c256("80"), AdmissionRejected: c256("177"), BudgetDenied: c256("75"),
		DeadlineExhausted: c256("180"), ProviderError: c256("203"), Timeout: c256("209"),
		Originals: c256("75"), Attempts: c256("220"),
		FastFailure: c256("220"), Failure: c256("203"),
	}
}

// lightTheme is dark, saturated colours on a light background.
func lightTheme() Theme {
	return Theme{
		Text: c256("235"), Dim: c256("243"), Accent: c256("25"), Warn: c256("130"),
		Live: c256("28"), Paused: c256("130"), Replay: c256("30"), Down: c256("160"),
		Success: c256("28"), Rescued: c256("30"), AdmissionRejected: c256("90"), BudgetDenied: c256("25"),
		DeadlineExhausted: c256("94"), ProviderError: c256("160"), Timeout: c256("166"),
		Originals: c256("25"), Attempts: c256("130"),
		FastFailure: c256("130"), Failure: c256("160"),
	}
}

// rgSafeTheme uses the Okabe–Ito colours (as 256-colour approximations):
// blue for what went well, orange and vermillion for what failed, reddish
// purple and yellow for protection, so no meaning rests on red vs green.
func rgSafeTheme() Theme {
	const (
		orange     = "214" // #E69F00
		skyBlue    = "74"  // #56B4E9
		bluish     = "36"  // #009E73
		yellow     = "227" // #F0E442
		blue       = "25"  // #0072B2
		vermillion = "166" // #D55E00
		purple     = "175" // #CC79A7
	)
	return Theme{
		Dim: lipgloss.ANSIColor(8), Accent: c256(skyBlue), Warn: c256(orange),
		Live: c256(skyBlue), Paused: c256(yellow), Replay: c256(skyBlue), Down: c256(vermillion),
		Success: c256(blue), Rescued: c256(skyBlue), AdmissionRejected: c256(purple), BudgetDenied: c256(yellow),
		DeadlineExhausted: c256(bluish), ProviderError: c256(vermillion), Timeout: c256(orange),
		Originals: c256(skyBlue), Attempts: c256(orange),
		FastFailure: c256(orange), Failure: c256(vermillion),
	}
}
