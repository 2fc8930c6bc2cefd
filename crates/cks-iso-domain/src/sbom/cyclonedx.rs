//! CycloneDX 1.6 JSON: the fields cks-iso writes, and reads back in `verify`.

use serde::{Deserialize, Serialize};

use super::{Inventory, IsoFacts, Item, Kind, content_uuid, rfc3339, to_json};

/// The `bom-ref` of the ISO, the main component.
const ISO_REF: &str = "iso";

/// A CycloneDX BOM.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bom {
    #[serde(rename = "$schema", default)]
    schema: String,
    /// `CycloneDX`.
    pub bom_format: String,
    /// `1.6`.
    pub spec_version: String,
    /// `urn:uuid:<UUIDv5 of the content>`.
    #[serde(default)]
    pub serial_number: String,
    version: u32,
    /// The ISO and the tool.
    pub metadata: Metadata,
    /// One per image, binary or tarball, manifest.
    #[serde(default)]
    pub components: Vec<Component>,
    #[serde(default)]
    dependencies: Vec<Dependency>,
}

/// When, by what, about what.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metadata {
    /// RFC 3339, the build's epoch.
    pub timestamp: String,
    tools: Tools,
    /// The ISO.
    pub component: Component,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tools {
    components: Vec<Component>,
}

/// One component.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Component {
    /// `container`, `application`, `file`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Unique in the BOM: the path in the ISO.
    #[serde(rename = "bom-ref", default, skip_serializing_if = "String::is_empty")]
    pub bom_ref: String,
    /// The name.
    pub name: String,
    /// Version or tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// What it is, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// SHA-256.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<Hash>,
    /// Package URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purl: Option<String>,
    #[serde(
        rename = "externalReferences",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    external_references: Vec<ExternalReference>,
    /// `cks-iso:path`, `cks-iso:source`, `cks-iso:index-digest`, …
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

impl Component {
    /// The value of property `name`.
    pub fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.value.as_str())
    }

    /// The SHA-256 hash, if listed.
    pub fn sha256(&self) -> Option<&str> {
        self.hashes
            .iter()
            .find(|h| h.alg == "SHA-256")
            .map(|h| h.content.as_str())
    }
}

/// A hash.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Hash {
    /// `SHA-256`.
    pub alg: String,
    /// Lowercase hex.
    pub content: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ExternalReference {
    #[serde(rename = "type")]
    kind: String,
    url: String,
}

/// A name-value pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Property {
    /// `cks-iso:…`.
    pub name: String,
    /// The value.
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Dependency {
    #[serde(rename = "ref")]
    reference: String,
    #[serde(rename = "dependsOn", default)]
    depends_on: Vec<String>,
}

fn property(name: &str, value: &str) -> Property {
    Property {
        name: format!("cks-iso:{name}"),
        value: value.to_owned(),
    }
}

fn sha256(hex: &str) -> Vec<Hash> {
    vec![Hash {
        alg: "SHA-256".into(),
        content: hex.to_owned(),
    }]
}

pub(super) fn render(inventory: &Inventory, iso: Option<&IsoFacts>) -> String {
    let main = iso_component(inventory, iso);
    let components: Vec<Component> = inventory.items().into_iter().map(component).collect();
    let dependencies = vec![Dependency {
        reference: ISO_REF.into(),
        depends_on: components.iter().map(|c| c.bom_ref.clone()).collect(),
    }];
    let mut bom = Bom {
        schema: "http://cyclonedx.org/schema/bom-1.6.schema.json".into(),
        bom_format: "CycloneDX".into(),
        spec_version: "1.6".into(),
        serial_number: String::new(),
        version: 1,
        metadata: Metadata {
            timestamp: rfc3339(inventory.epoch),
            tools: Tools {
                components: vec![Component {
                    kind: "application".into(),
                    name: "cks-iso".into(),
                    version: Some(env!("CARGO_PKG_VERSION").into()),
                    ..Component::default()
                }],
            },
            component: main,
        },
        components,
        dependencies,
    };
    let uuid = content_uuid(to_json(&bom).as_bytes());
    bom.serial_number = format!("urn:uuid:{uuid}");
    to_json(&bom)
}

/// The ISO itself: the BOM's subject, with its sha256 and size once written.
fn iso_component(inventory: &Inventory, iso: Option<&IsoFacts>) -> Component {
    let v = &inventory.versions;
    let mut main = Component {
        kind: "file".into(),
        bom_ref: ISO_REF.into(),
        name: inventory.iso.clone(),
        version: Some(v.kubernetes.clone()),
        description: Some(inventory.description()),
        properties: vec![
            property("arch", &v.arch),
            property("kubernetes", &v.kubernetes),
        ],
        ..Component::default()
    };
    if let Some(cloudstack) = &v.cloudstack {
        main.properties.push(property("cloudstack", cloudstack));
    }
    if let Some(iso) = iso {
        main.hashes = sha256(&iso.sha256);
        main.properties
            .push(property("size", &iso.size.to_string()));
    }
    main
}

/// One item of the ISO (an image, a binary, a manifest) as a component.
fn component(item: Item) -> Component {
    let mut properties = vec![property("path", &item.path)];
    if let Some(index) = &item.index_digest {
        properties.push(property("index-digest", index));
    }
    if let Some(source) = &item.source {
        properties.push(property("source", source));
    }
    if let Some(signature) = &item.signature {
        properties.push(property("signature", signature));
    }
    Component {
        kind: match item.kind {
            Kind::Image => "container",
            Kind::Binary => "application",
            Kind::Manifest => "file",
        }
        .into(),
        bom_ref: item.path,
        name: item.name,
        version: item.version,
        description: None,
        hashes: sha256(&item.sha256),
        purl: item.purl,
        external_references: item
            .url
            .into_iter()
            .map(|url| ExternalReference {
                kind: "distribution".into(),
                url,
            })
            .collect(),
        properties,
    }
}

/// Reads a CycloneDX document back; the error says what does not fit.
pub fn parse(text: &str) -> Result<Bom, super::ReadError> {
    let bom: Bom = serde_json::from_str(text)?;
    if bom.bom_format != "CycloneDX" || bom.spec_version != "1.6" {
        return Err(super::ReadError::Version {
            found: format!("{} {}", bom.bom_format, bom.spec_version),
            wanted: "CycloneDX 1.6",
        });
    }
    Ok(bom)
}
