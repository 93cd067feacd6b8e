//! Google's errors, classified where the shared HTTP mapping cannot know them.
//!
//! Google answers `{"error": {"code", "message", "status"}}`. An invalid API key is a 400
//! (`API key not valid`), which status alone would read as a bad request; a prompt over the
//! window ("the input token count … exceeds the maximum number of tokens allowed") is known
//! to the shared mapping. Errors inside a 200 stream carry the same object, so they are
//! mapped by its `code`, or by its `status` name when the code is missing.

use serde_json::Value;

use super::PROVIDER;
use crate::ProviderError;
use crate::http::status_error;

/// Refines an error mapped by the shared HTTP code with what Google's messages say.
pub(crate) fn classify(err: ProviderError) -> ProviderError {
    match err {
        ProviderError::BadRequest {
            provider,
            status: 400,
            message,
        } if is_key_error(&message) => ProviderError::Unauthorized {
            provider,
            status: 400,
            message,
        },
        other => other,
    }
}

/// The error for an `error` object sent inside a successful stream.
pub(super) fn stream_error(error: &Value) -> ProviderError {
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..=599).contains(code))
        .or_else(|| {
            error
                .get("status")
                .and_then(Value::as_str)
                .and_then(status_of)
        })
        // An unexplained failure after the answer began is most likely on Google's side.
        .unwrap_or(500);
    let body = match error {
        Value::String(message) => serde_json::json!({"error": {"message": message}}),
        other => serde_json::json!({"error": other}),
    };
    classify(status_error(PROVIDER, status, None, &body.to_string()))
}

/// The HTTP status Google uses for one of its canonical status names.
fn status_of(name: &str) -> Option<u16> {
    Some(match name {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => 400,
        "UNAUTHENTICATED" => 401,
        "PERMISSION_DENIED" => 403,
        "NOT_FOUND" => 404,
        "RESOURCE_EXHAUSTED" => 429,
        "CANCELLED" => 499,
        "INTERNAL" | "UNKNOWN" | "DATA_LOSS" => 500,
        "UNAVAILABLE" => 503,
        "DEADLINE_EXCEEDED" => 504,
        _ => return None,
    })
}

fn is_key_error(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("api key not valid")
        || lower.contains("api_key_invalid")
        || lower.contains("api key expired")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn google(code: u16, status: &str, message: &str) -> String {
        json!({"error": {"code": code, "message": message, "status": status}}).to_string()
    }

    #[test]
    fn a_prompt_over_the_window_is_context_too_long() {
        let body = google(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        );
        assert!(matches!(
            classify(status_error(PROVIDER, 400, None, &body)),
            ProviderError::ContextTooLong { message } if message.contains("1200000")
        ));
    }

    #[test]
    fn an_invalid_key_is_unauthorized_even_as_a_400() {
        let body = google(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
        );
        assert!(matches!(
            classify(status_error(PROVIDER, 400, None, &body)),
            ProviderError::Unauthorized { status: 400, .. }
        ));
        let other = google(400, "INVALID_ARGUMENT", "Invalid value at 'contents[0]'");
        assert!(matches!(
            classify(status_error(PROVIDER, 400, None, &other)),
            ProviderError::BadRequest { status: 400, message, .. } if message.starts_with("Invalid value")
        ));
    }

    #[test]
    fn stream_errors_map_by_code_then_by_status_name() {
        let overloaded =
            json!({"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"});
        assert!(matches!(
            stream_error(&overloaded),
            ProviderError::Unavailable { status: 503, message, .. } if message == "The model is overloaded."
        ));
        let quota = json!({"message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"});
        assert!(stream_error(&quota).is_retryable());
        let denied = json!({"code": 403, "message": "denied", "status": "PERMISSION_DENIED"});
        assert!(matches!(
            stream_error(&denied),
            ProviderError::Unauthorized { status: 403, .. }
        ));
        let bare = json!("something broke");
        assert!(matches!(
            stream_error(&bare),
            ProviderError::Unavailable { status: 500, message, .. } if message == "something broke"
        ));
        let long = json!({"code": 400, "message": "The input token count (5) exceeds the maximum number of tokens allowed (4).", "status": "INVALID_ARGUMENT"});
        assert!(matches!(
            stream_error(&long),
            ProviderError::ContextTooLong { .. }
        ));
    }
}
