//! The registry of built-in tools and what each declares about itself.

use larik_protocol::ToolKind;
use larik_tools::ToolRegistry;

#[test]
fn every_builtin_is_registered_with_an_object_schema() {
    let registry = ToolRegistry::builtin();
    assert_eq!(
        registry.names(),
        [
            "bash",
            "edit",
            "glob",
            "grep",
            "multi_edit",
            "read",
            "todo_write",
            "write"
        ]
    );
    for tool in registry.iter() {
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        assert!(schema["required"].is_array(), "{}", tool.name());
        assert!(!tool.description().is_empty());
    }
    let kind = |name: &str| registry.get(name).expect("registered").kind();
    assert_eq!(kind("read"), ToolKind::Read);
    assert_eq!(kind("write"), ToolKind::Edit);
    assert_eq!(kind("multi_edit"), ToolKind::Edit);
    assert_eq!(kind("bash"), ToolKind::Execute);
    assert_eq!(kind("grep"), ToolKind::Search);
    assert_eq!(kind("todo_write"), ToolKind::Think);
    let read_only: Vec<String> = registry
        .iter()
        .filter(|tool| tool.read_only())
        .map(|tool| tool.name().to_string())
        .collect();
    assert_eq!(read_only, ["glob", "grep", "read", "todo_write"]);
}
