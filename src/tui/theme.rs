//! Themes: `themes/*.toml`, compiled in; a file of the same name in the user's theme directory
//! (`$XDG_CONFIG_HOME/ongraph/themes`) replaces a built-in one, and new names add themes. With
//! `NO_COLOR` set every theme draws without colour: states stay apart by symbols and modifiers.

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use std::path::Path;
use std::str::FromStr;

const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

/// A theme file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    text: String,
    dim: String,
    kept: String,
    pruned: String,
    user: String,
    candidate: String,
    correction: String,
    flagged: String,
    accent: String,
    focus: String,
    border: String,
    selection_fg: String,
    selection_bg: String,
    status_fg: String,
    status_bg: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    /// Draw without colour (`NO_COLOR`).
    pub plain: bool,
    pub text: Color,
    pub dim: Color,
    pub kept: Color,
    pub pruned: Color,
    pub user: Color,
    pub candidate: Color,
    pub correction: Color,
    pub flagged: Color,
    pub accent: Color,
    pub focus: Color,
    pub border: Color,
    pub selection: (Color, Color),
    pub status: (Color, Color),
}

impl Theme {
    pub fn parse(origin: &str, text: &str) -> Result<Self, String> {
        let f: ThemeFile = toml::from_str(text).map_err(|e| {
            // toml's own text spans lines with a caret drawing; a status line takes one.
            let line = e.span().and_then(|s| text.get(..s.start)).map(|before| before.matches('\n').count() + 1);
            let at = line.map(|l| format!(":{l}")).unwrap_or_default();
            format!("{origin}{at}: {}", e.message().trim())
        })?;
        let c =
            |field: &str, v: &str| Color::from_str(v).map_err(|_| format!("{origin}: {field} = {v:?} is not a colour"));
        Ok(Self {
            plain: false,
            text: c("text", &f.text)?,
            dim: c("dim", &f.dim)?,
            kept: c("kept", &f.kept)?,
            pruned: c("pruned", &f.pruned)?,
            user: c("user", &f.user)?,
            candidate: c("candidate", &f.candidate)?,
            correction: c("correction", &f.correction)?,
            flagged: c("flagged", &f.flagged)?,
            accent: c("accent", &f.accent)?,
            focus: c("focus", &f.focus)?,
            border: c("border", &f.border)?,
            selection: (c("selection_fg", &f.selection_fg)?, c("selection_bg", &f.selection_bg)?),
            status: (c("status_fg", &f.status_fg)?, c("status_bg", &f.status_bg)?),
            name: f.name,
        })
    }

    /// Plain terminal colours: for when no theme file loads (the built-in ones are tested to).
    pub fn fallback() -> Self {
        Self {
            name: "fallback".into(),
            plain: false,
            text: Color::Reset,
            dim: Color::DarkGray,
            kept: Color::Green,
            pruned: Color::DarkGray,
            user: Color::Yellow,
            candidate: Color::Cyan,
            correction: Color::Magenta,
            flagged: Color::Red,
            accent: Color::LightBlue,
            focus: Color::LightBlue,
            border: Color::Gray,
            selection: (Color::Black, Color::LightBlue),
            status: (Color::Black, Color::Gray),
        }
    }

    /// Foreground `color`, unless the theme is plain.
    pub fn fg(&self, color: Color) -> Style {
        if self.plain { Style::new() } else { Style::new().fg(color) }
    }

    /// Secondary text: hints, ids, details.
    pub fn faint(&self) -> Style {
        self.fg(self.dim).add_modifier(Modifier::DIM)
    }

    /// The selected row: reversed when plain, so it shows without colour.
    pub fn selected(&self) -> Style {
        if self.plain {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(self.selection.0).bg(self.selection.1)
        }
    }

    pub fn status_bar(&self) -> Style {
        if self.plain {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new().fg(self.status.0).bg(self.status.1)
        }
    }

    pub fn border(&self, focused: bool) -> Style {
        match (focused, self.plain) {
            (true, true) => Style::new().add_modifier(Modifier::BOLD),
            (true, false) => Style::new().fg(self.focus).add_modifier(Modifier::BOLD),
            (false, true) => Style::new(),
            (false, false) => Style::new().fg(self.border),
        }
    }
}

/// The built-in themes, then the user's (replacing built-ins of the same name). A broken user
/// theme is reported, not fatal: the others still load.
pub fn load_all(user_dir: Option<&Path>) -> (Vec<Theme>, Vec<String>) {
    let mut themes: Vec<Theme> = BUILTIN.iter().filter_map(|(name, text)| Theme::parse(name, text).ok()).collect();
    let mut problems = Vec::new();
    let Some(entries) = user_dir.and_then(|d| std::fs::read_dir(d).ok()) else { return (themes, problems) };
    let mut paths: Vec<_> =
        entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "toml")).collect();
    paths.sort();
    for path in paths {
        match crate::text_file::read(&path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|t| Theme::parse(&path.display().to_string(), &t))
        {
            Ok(theme) => match themes.iter_mut().find(|t| t.name == theme.name) {
                Some(slot) => *slot = theme,
                None => themes.push(theme),
            },
            Err(e) => problems.push(e),
        }
    }
    (themes, problems)
}

/// The user's theme directory.
pub fn user_dir() -> Option<std::path::PathBuf> {
    dirs::config_dir().map(|d| d.join("ongraph").join("themes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_themes_parse() {
        for (name, text) in BUILTIN {
            let theme = Theme::parse(name, text).unwrap();
            assert_eq!(&theme.name, name, "a theme's name matches its file");
        }
    }

    #[test]
    fn a_user_theme_replaces_a_builtin_and_a_broken_one_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let dark = BUILTIN[0].1.replace("kept = \"green\"", "kept = \"#123456\"");
        std::fs::write(dir.path().join("dark.toml"), dark).unwrap();
        std::fs::write(dir.path().join("broken.toml"), "name = \"broken\"\nkept = \"not-a-colour\"").unwrap();
        let (themes, problems) = load_all(Some(dir.path()));
        assert_eq!(themes.len(), 3);
        assert_eq!(themes[0].kept, Color::Rgb(0x12, 0x34, 0x56));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].contains("broken.toml"), "{problems:?}");
    }
}
