//! What a record keeps of a URL: `versions.txt`, the lock, the SBOMs, the cache index and the
//! progress events name upstream URLs, and none of them may keep a user name or password a mirror
//! or a manifest URL carried.

/// `url` without its user name and password, for everything recorded (`versions.txt`, the lock,
/// the SBOMs, the cache index, progress events): the build uses the credentials, nothing keeps
/// them. Text that is not a URL is returned as is.
pub fn strip_userinfo(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}
