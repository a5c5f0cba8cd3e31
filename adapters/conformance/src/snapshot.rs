//! The normalized tree text of `profconv tree`, for snapshot tests.

use profconv_ir::transform::{self, Transform};
use profconv_ir::{CallTree, IrError, Profile, ProfileRef, TreeTextOptions, render_tree};
use profconv_plugin::{Context, Format, Input, Options, PluginError};

/// What [`tree_text_with`] renders.
#[derive(Clone, Debug, Default)]
pub struct TreeTextConfig {
    /// Value column, sibling order, other values: as `profconv tree` (the default is its default:
    /// the first weight, siblings by descending total, ties by name).
    pub tree: TreeTextOptions,
    /// Transforms applied in order before rendering, as `profconv tree -T` does; for snapshots
    /// mostly [`Transform::MaxDepth`] and [`Transform::MinTotal`].
    pub transforms: Vec<Transform>,
    /// Options for the parser (`-O KEY[=VALUE]` pairs).
    pub parse_options: Vec<(String, Option<String>)>,
}

/// Parses `bytes` with format `F` and renders the call tree as `profconv tree` prints it: one
/// line per call node, `NAME self=S total=T`, siblings in a stable order, numbers in the
/// profile's fixed-point decimals. Deterministic: the same input gives the same text on every
/// platform, which is what a snapshot needs.
///
/// ```
/// use profconv_conformance::tree_text;
/// use profconv_folded::Folded;
///
/// let text = tree_text::<Folded>(b"main;parse 3\nmain;eval 1\n").unwrap();
/// assert_eq!(text, "main self=0 total=4\n  parse self=3 total=3\n  eval self=1 total=1\n");
/// ```
pub fn tree_text<F: Format>(bytes: &[u8]) -> Result<String, PluginError> {
    tree_text_with::<F>(bytes, &TreeTextConfig::default())
}

/// [`tree_text`] with parser options, transforms and tree options.
///
/// ```
/// use profconv_conformance::{TreeTextConfig, tree_text_with};
/// use profconv_folded::Folded;
/// use profconv_ir::Transform;
///
/// let config = TreeTextConfig {
///     transforms: vec![Transform::MaxDepth(1)],
///     ..Default::default()
/// };
/// let text = tree_text_with::<Folded>(b"main;parse;lex 3\nmain;eval 1\n", &config).unwrap();
/// assert_eq!(text, "main self=4 total=4\n");
/// ```
pub fn tree_text_with<F: Format>(
    bytes: &[u8],
    config: &TreeTextConfig,
) -> Result<String, PluginError> {
    let profile = F::parse(
        &mut Input::from_slice(bytes),
        &Options::new(config.parse_options.clone()),
        &mut Context::silent(),
    )?;
    Ok(profile_tree_text(&profile.view(), config)?)
}

/// The tree text of a profile already in memory (for example one a plugin returned through the
/// host), with `config`'s transforms and tree options (its parser options are not used).
pub fn profile_tree_text(p: &ProfileRef<'_>, config: &TreeTextConfig) -> Result<String, IrError> {
    let mut owned: Option<Profile> = None;
    for t in &config.transforms {
        let next = match &owned {
            Some(prev) => transform::apply(&prev.view(), t)?.0,
            None => transform::apply(p, t)?.0,
        };
        owned = Some(next);
    }
    let render = |view: &ProfileRef<'_>| {
        let tree = CallTree::build(view)?;
        render_tree(view, &tree, &config.tree)
    };
    match &owned {
        Some(prev) => render(&prev.view()),
        None => render(p),
    }
}
